import { z } from 'zod';
import { envBoolean, envKeyMaterial, envLogLevel, envPort, type EnvRule } from './env.js';
import { envOriginList } from './hardening.js';

/**
 * The agent's environment contract, in one place for both sides: the agent parses its
 * environment with it (services/agent/src/config.ts) and the broker's local provider
 * writes `AgentEnvVariables`, so a misspelt variable is a compile error rather than a
 * silent default (once `AGENT_NETWORK` defaulted to network on).
 */
const MIN_KEY_BYTES = 32;

const bytes = (fallback: number) =>
  z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).default(fallback);
const count = (fallback: number) => z.coerce.number().int().min(1).max(10_000).default(fallback);

export const AgentEnv = z.object({
  SANDBOX_ID: z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/, 'must be a sandbox id (letters, digits, _ . : -)'),
  SANDBOX_SIGNING_KEY: envKeyMaterial(MIN_KEY_BYTES).optional(),
  SANDBOX_SIGNING_KEY_FILE: z.string().optional(),
  // An open directory descriptor holding agent.key, revocations.json and sandbox-env.json: how the
  // local provider hands them over without any path to them in the agent's view (D21).
  AGENT_STATE_FD: z.coerce.number().int().min(3).max(1023).optional(),
  // The agent runs in the sandbox's own view (agent-view.ts): the holder shares its /tmp, /run, terminals.
  AGENT_SHARED_VIEW: envBoolean(false),
  SANDBOX_TOKEN_ISSUER: z.string().min(1).default('sbx-broker'),
  // The client policy's injected environment for user processes (a JSON object file, re-read on change).
  AGENT_SANDBOX_ENV_FILE: z.string().min(1).optional(),
  // opaque: tokens are checked by asking the broker at AGENT_INTROSPECTION_URL (D20).
  AGENT_TOKEN_FORMAT: z.enum(['jwt', 'opaque']).default('jwt'),
  AGENT_INTROSPECTION_URL: z.url({ protocol: /^https?$/ }).optional(),
  KEY_ROTATION_GRACE_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  WORKSPACE_ROOT: z.string().default('/workspace'),
  HOST: z.string().default('0.0.0.0'),
  PORT: envPort(8080),
  LOG_LEVEL: envLogLevel,
  WS_AUTH_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  // Hardening (docs/security.md, "Hardening"): WebSockets still authenticating, and browser origins.
  WS_MAX_UNAUTHENTICATED: z.coerce.number().int().min(1).max(100_000).default(256),
  CORS_ALLOWED_ORIGINS: envOriginList,
  HSTS_MAX_AGE_SECONDS: z.coerce.number().int().min(0).max(63_072_000).default(0),
  AGENT_LEGACY_ENDPOINTS: envBoolean(false),
  // The operator's bearer for GET /metrics (capability tokens of the sandbox work too).
  AGENT_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  AGENT_LAUNCHER: z.enum(['direct', 'bubblewrap']).default('direct'),
  AGENT_BWRAP_PATH: z.string().default('/usr/bin/bwrap'),
  AGENT_NETWORK: envBoolean(true),
  AGENT_HIDE_PATHS: z.string().optional(),
  AGENT_SLIRP4NETNS_PATH: z.string().default('/usr/bin/slirp4netns'),
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

export const agentEnvRules: readonly EnvRule[] = [
  (env) =>
    ['SANDBOX_SIGNING_KEY', 'SANDBOX_SIGNING_KEY_FILE', 'AGENT_STATE_FD'].filter(
      (name) => env[name] !== undefined,
    ).length !== 1
      ? 'SANDBOX_SIGNING_KEY: set exactly one of SANDBOX_SIGNING_KEY, SANDBOX_SIGNING_KEY_FILE or AGENT_STATE_FD'
      : undefined,
  (env) =>
    env['AGENT_TOKEN_FORMAT'] === 'opaque' && env['AGENT_INTROSPECTION_URL'] === undefined
      ? 'AGENT_INTROSPECTION_URL: required with AGENT_TOKEN_FORMAT=opaque'
      : undefined,
];

/** What a launcher of the agent may set: every name of the contract, each a string. */
export type AgentEnvVariables = { readonly [Name in keyof z.input<typeof AgentEnv>]?: string };
