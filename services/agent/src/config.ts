import path from 'node:path';
import { z } from 'zod';
import {
  envBoolean,
  envKeyMaterial,
  envLogLevel,
  envPort,
  parseEnv,
  type EnvRule,
  type Environment,
} from '@sbx/service-kit';

const MIN_KEY_BYTES = 32;

const bytes = (fallback: number) =>
  z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).default(fallback);
const count = (fallback: number) => z.coerce.number().int().min(1).max(10_000).default(fallback);
const unixId = z.coerce.number().int().min(1).max(2_147_483_647).optional();

const AgentEnv = z.object({
  SANDBOX_ID: z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/, 'must be a sandbox id (letters, digits, _ . : -)'),
  SANDBOX_SIGNING_KEY: envKeyMaterial(MIN_KEY_BYTES).optional(),
  SANDBOX_SIGNING_KEY_FILE: z.string().optional(),
  SANDBOX_TOKEN_ISSUER: z.string().min(1).default('sbx-broker'),
  KEY_ROTATION_GRACE_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  WORKSPACE_ROOT: z.string().default('/workspace'),
  HOST: z.string().default('0.0.0.0'),
  PORT: envPort(8080),
  LOG_LEVEL: envLogLevel,
  WS_AUTH_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  AGENT_LEGACY_ENDPOINTS: envBoolean(false),
  AGENT_LAUNCHER: z.enum(['direct', 'bubblewrap']).default('direct'),
  AGENT_BWRAP_PATH: z.string().default('/usr/bin/bwrap'),
  AGENT_NETWORK: envBoolean(true),
  AGENT_HIDE_PATHS: z.string().optional(),
  AGENT_SLIRP4NETNS_PATH: z.string().default('/usr/bin/slirp4netns'),
  AGENT_CGROUPS: z.string().optional(),
  AGENT_RUN_AS_UID: unixId,
  AGENT_RUN_AS_GID: unixId,
  AGENT_FILES_MAX_UPLOAD_BYTES: bytes(1024 ** 3),
  AGENT_MAX_PROCESSES: count(32),
  AGENT_EXEC_MAX_STDOUT_BYTES: bytes(256 * 1024),
  AGENT_EXEC_MAX_STDERR_BYTES: bytes(32 * 1024),
  AGENT_EXEC_DEFAULT_TIMEOUT_MS: z.coerce.number().int().min(100).max(86_400_000).default(300_000),
  AGENT_PROCESS_OUTPUT_BUFFER_BYTES: bytes(1024 ** 2),
  AGENT_LEGACY_INTERPRETER: z.string().optional(),
  AGENT_MAX_SHELLS: count(16),
  AGENT_SHELL_IDLE_GRACE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  AGENT_SHELL_SCROLLBACK_BYTES: bytes(1024 ** 2),
  AGENT_SHELL: z.string().optional(),
});

const agentRules: readonly EnvRule[] = [
  (env) =>
    (env['SANDBOX_SIGNING_KEY'] === undefined) === (env['SANDBOX_SIGNING_KEY_FILE'] === undefined)
      ? 'SANDBOX_SIGNING_KEY: set exactly one of SANDBOX_SIGNING_KEY or SANDBOX_SIGNING_KEY_FILE'
      : undefined,
  (env) =>
    (env['AGENT_RUN_AS_UID'] === undefined) !== (env['AGENT_RUN_AS_GID'] === undefined)
      ? 'AGENT_RUN_AS_GID: AGENT_RUN_AS_UID and AGENT_RUN_AS_GID go together'
      : undefined,
];

export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

export interface AgentConfig {
  readonly sandboxId: string;
  readonly signingKey:
    | { readonly kind: 'inline'; readonly base64url: string }
    | { readonly kind: 'file'; readonly path: string };
  readonly tokenIssuer: string;
  readonly keyRotationGraceSeconds: number;
  readonly workspaceRoot: string;
  readonly host: string;
  readonly port: number;
  readonly logLevel: string;
  readonly wsAuthTimeoutMs: number;
  readonly legacyEndpoints: boolean;
  readonly launcher:
    | { readonly kind: 'direct'; readonly runAs?: RunAs }
    | {
        readonly kind: 'bubblewrap';
        readonly bwrapPath: string;
        readonly slirp4netnsPath: string;
        readonly network: boolean;
        readonly hidePaths: readonly string[];
        readonly runAs?: RunAs;
      };
  /** cgroup directories the agent joins at start, so it and every user process count against them. */
  readonly cgroups: readonly string[];
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
  const uid = parsed.AGENT_RUN_AS_UID;
  const gid = parsed.AGENT_RUN_AS_GID;
  const runAs = uid !== undefined && gid !== undefined ? { runAs: { uid, gid } } : {};
  if (parsed.AGENT_LAUNCHER === 'bubblewrap') {
    return {
      kind: 'bubblewrap',
      bwrapPath: parsed.AGENT_BWRAP_PATH,
      slirp4netnsPath: parsed.AGENT_SLIRP4NETNS_PATH,
      network: parsed.AGENT_NETWORK,
      hidePaths: pathList(parsed.AGENT_HIDE_PATHS),
      ...runAs,
    };
  }
  return { kind: 'direct', ...runAs };
}

/** The agent's only reader of the environment. */
export function loadAgentConfig(env: Environment = process.env): AgentConfig {
  const parsed = parseEnv('agent', AgentEnv, env, agentRules);
  const keyFile = parsed.SANDBOX_SIGNING_KEY_FILE;
  return {
    sandboxId: parsed.SANDBOX_ID,
    signingKey:
      keyFile === undefined
        ? { kind: 'inline', base64url: parsed.SANDBOX_SIGNING_KEY ?? '' }
        : { kind: 'file', path: path.resolve(keyFile) },
    tokenIssuer: parsed.SANDBOX_TOKEN_ISSUER,
    keyRotationGraceSeconds: parsed.KEY_ROTATION_GRACE_SECONDS,
    workspaceRoot: path.resolve(parsed.WORKSPACE_ROOT),
    host: parsed.HOST,
    port: parsed.PORT,
    logLevel: parsed.LOG_LEVEL,
    wsAuthTimeoutMs: parsed.WS_AUTH_TIMEOUT_MS,
    legacyEndpoints: parsed.AGENT_LEGACY_ENDPOINTS,
    launcher: launcherOf(parsed),
    cgroups: pathList(parsed.AGENT_CGROUPS),
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
