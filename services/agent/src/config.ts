import path from 'node:path';
import type { z } from 'zod';
import { AgentEnv, agentEnvRules, parseEnv, type Environment } from '@sbx/service-kit';

export interface AgentConfig {
  readonly sandboxId: string;
  readonly signingKey:
    | { readonly kind: 'inline'; readonly base64url: string }
    | { readonly kind: 'file'; readonly path: string }
    | { readonly kind: 'state-fd'; readonly fd: number };
  readonly tokenIssuer: string;
  /** AGENT_SANDBOX_ENV_FILE: variables every user process gets (adapters/sandbox-env-file.ts). */
  readonly sandboxEnvFile?: string | undefined;
  /** Set in opaque-token mode (AGENT_TOKEN_FORMAT=opaque, D20): the broker's introspection endpoint. */
  readonly introspectionUrl?: string | undefined;
  readonly keyRotationGraceSeconds: number;
  readonly workspaceRoot: string;
  readonly host: string;
  readonly port: number;
  readonly logLevel: string;
  readonly wsAuthTimeoutMs: number;
  /** WebSockets past this many still awaiting `auth` are closed 1013 at once. */
  readonly wsMaxUnauthenticated: number;
  /** Browser origins allowed CORS and WebSocket upgrades; a request without Origin is not a browser's. */
  readonly allowedOrigins: readonly string[];
  /** 0: no Strict-Transport-Security. */
  readonly hstsMaxAgeSeconds: number;
  readonly legacyEndpoints: boolean;
  /** AGENT_METRICS_TOKEN: the operator's bearer for /metrics (absent: capability tokens only). */
  readonly metricsToken?: string | undefined;
  readonly launcher:
    | { readonly kind: 'direct' }
    | {
        readonly kind: 'bubblewrap';
        readonly bwrapPath: string;
        readonly slirp4netnsPath: string;
        readonly network: boolean;
        readonly hidePaths: readonly string[];
        /** The agent runs in the sandbox's own view: user processes share its /tmp, /run, terminals. */
        readonly sharedView: boolean;
      };
  readonly files: { readonly maxUploadBytes: number };
  readonly exec: {
    readonly maxConcurrentProcesses: number;
    readonly maxStdoutBytes: number;
    readonly maxStderrBytes: number;
    readonly defaultTimeoutMs: number;
    readonly outputBufferBytes: number;
    readonly legacyInterpreter: string | undefined;
  };
  readonly shells: {
    readonly maxShells: number;
    readonly idleGraceMs: number;
    readonly scrollbackBytes: number;
    readonly shell: string | undefined;
  };
}

const pathList = (value: string | undefined): string[] =>
  (value ?? '')
    .split(':')
    .filter((p) => p !== '')
    .map((p) => path.resolve(p));

function launcherOf(parsed: z.infer<typeof AgentEnv>): AgentConfig['launcher'] {
  if (parsed.AGENT_LAUNCHER === 'bubblewrap') {
    return {
      kind: 'bubblewrap',
      bwrapPath: parsed.AGENT_BWRAP_PATH,
      slirp4netnsPath: parsed.AGENT_SLIRP4NETNS_PATH,
      network: parsed.AGENT_NETWORK,
      hidePaths: pathList(parsed.AGENT_HIDE_PATHS),
      sharedView: parsed.AGENT_SHARED_VIEW,
    };
  }
  return { kind: 'direct' };
}

function signingKeyOf(parsed: z.infer<typeof AgentEnv>): AgentConfig['signingKey'] {
  if (parsed.AGENT_STATE_FD !== undefined) return { kind: 'state-fd', fd: parsed.AGENT_STATE_FD };
  const keyFile = parsed.SANDBOX_SIGNING_KEY_FILE;
  return keyFile === undefined
    ? { kind: 'inline', base64url: parsed.SANDBOX_SIGNING_KEY ?? '' }
    : { kind: 'file', path: path.resolve(keyFile) };
}

/** The agent's only reader of the environment. */
export function loadAgentConfig(env: Environment = process.env): AgentConfig {
  const parsed = parseEnv('agent', AgentEnv, env, agentEnvRules);
  return {
    sandboxId: parsed.SANDBOX_ID,
    signingKey: signingKeyOf(parsed),
    tokenIssuer: parsed.SANDBOX_TOKEN_ISSUER,
    sandboxEnvFile:
      parsed.AGENT_SANDBOX_ENV_FILE === undefined ? undefined : path.resolve(parsed.AGENT_SANDBOX_ENV_FILE),
    introspectionUrl: parsed.AGENT_TOKEN_FORMAT === 'opaque' ? parsed.AGENT_INTROSPECTION_URL : undefined,
    keyRotationGraceSeconds: parsed.KEY_ROTATION_GRACE_SECONDS,
    workspaceRoot: path.resolve(parsed.WORKSPACE_ROOT),
    host: parsed.HOST,
    port: parsed.PORT,
    logLevel: parsed.LOG_LEVEL,
    wsAuthTimeoutMs: parsed.WS_AUTH_TIMEOUT_MS,
    wsMaxUnauthenticated: parsed.WS_MAX_UNAUTHENTICATED,
    allowedOrigins: parsed.CORS_ALLOWED_ORIGINS,
    hstsMaxAgeSeconds: parsed.HSTS_MAX_AGE_SECONDS,
    legacyEndpoints: parsed.AGENT_LEGACY_ENDPOINTS,
    metricsToken: parsed.AGENT_METRICS_TOKEN,
    launcher: launcherOf(parsed),
    files: { maxUploadBytes: parsed.AGENT_FILES_MAX_UPLOAD_BYTES },
    exec: {
      maxConcurrentProcesses: parsed.AGENT_MAX_PROCESSES,
      maxStdoutBytes: parsed.AGENT_EXEC_MAX_STDOUT_BYTES,
      maxStderrBytes: parsed.AGENT_EXEC_MAX_STDERR_BYTES,
      defaultTimeoutMs: parsed.AGENT_EXEC_DEFAULT_TIMEOUT_MS,
      outputBufferBytes: parsed.AGENT_PROCESS_OUTPUT_BUFFER_BYTES,
      legacyInterpreter: parsed.AGENT_LEGACY_INTERPRETER,
    },
    shells: {
      maxShells: parsed.AGENT_MAX_SHELLS,
      idleGraceMs: parsed.AGENT_SHELL_IDLE_GRACE_SECONDS * 1000,
      scrollbackBytes: parsed.AGENT_SHELL_SCROLLBACK_BYTES,
      shell: parsed.AGENT_SHELL,
    },
  };
}
