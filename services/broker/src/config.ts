import path from 'node:path';
import { z } from 'zod';
import { TOKEN_FORMATS, type TokenFormat } from '@sbx/tokens';
import {
  envKeyMaterial,
  envLogLevel,
  envOriginList,
  envPort,
  parseEnv,
  type EnvRule,
  type Environment,
} from '@sbx/service-kit';
import { apiKeyWeakness } from './domain/auth/api-key-strength.js';
import { REPO_ROOT } from './repo-root.js';

/**
 * The warm pool of a broker on embedded defaults (no DATABASE_URL, local sandboxes): a new
 * user's first ensure then finds a running agent instead of waiting for one to start, which
 * takes seconds on a busy machine. Two, so that a second thread opened right after the
 * first is warm too while the pool refills; an idle local sandbox costs ~25 MiB (PSS).
 */
export const EMBEDDED_WARM_POOL_SIZE = 2;

/** `<repository>/.data/broker`, whatever the working directory (pnpm runs scripts in the package's). */
const DEFAULT_DATA_DIR = path.join(REPO_ROOT, '.data', 'broker');

const BrokerEnv = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: envPort(8080),
  BROKER_PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  BROKER_DATA_DIR: z.string().default(DEFAULT_DATA_DIR),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/, message: 'must be a postgres:// URL' }).optional(),
  // Connections to the Postgres server per broker process (pg's default is 10).
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(10),
  REDIS_URL: z.url({ protocol: /^rediss?$/, message: 'must be a redis:// or rediss:// URL' }).optional(),
  // Brokers sharing a prefix share locks, presence and rate limits: one prefix per deployment.
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 letters, digits, _ . : -')
    .default('sbx'),
  // How long one Redis command may take before the breaker counts Redis as away.
  REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(50).max(60_000).default(2_000),
  BROKER_MASTER_KEY: envKeyMaterial(32).optional(),
  // Any strong secret: operators generate it with their own tools (openssl, Kubernetes, Vault).
  BROKER_BOOTSTRAP_API_KEY: z
    .string()
    .superRefine((key, ctx) => {
      const weakness = apiKeyWeakness(key);
      if (weakness !== undefined) ctx.addIssue({ code: 'custom', message: weakness });
    })
    .optional(),
  OIDC_ISSUER: z.url().optional(),
  OIDC_AUDIENCE: z.string().min(1).optional(),
  OIDC_JWKS_URL: z.url().optional(),
  SANDBOX_PROVIDER: z.enum(['local', 'docker', 'kubernetes']).default('local'),
  // Container providers (docs/provider-docker.md, docs/provider-kubernetes.md).
  SANDBOX_IMAGE: z.string().min(1).default('sbx-agent:latest'),
  DOCKER_HOST: z
    .string()
    .regex(/^(unix|tcp):\/\//, 'must be unix:///path or tcp://host:port')
    .optional(),
  DOCKER_NETWORK: z.string().min(1).default('sbx-sandboxes'),
  DOCKER_INTERNAL_NETWORK: z.string().min(1).default('sbx-internal'),
  DOCKER_AGENT_ADDRESS: z.enum(['container', 'published']).default('container'),
  K8S_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a namespace name')
    .default('sbx-sandboxes'),
  K8S_MODE: z.enum(['pods', 'agent-sandbox']).default('pods'),
  KUBECONFIG: z.string().min(1).optional(),
  K8S_SANDBOX_TEMPLATE: z.string().min(1).optional(),
  K8S_RUNTIME_CLASS: z.string().min(1).optional(),
  K8S_STORAGE_CLASS: z.string().min(1).optional(),
  LOCAL_ISOLATION: z.enum(['auto', 'bubblewrap', 'none']).default('auto'),
  // Workspace images allocated whole (docs/operations.md, "A full disk").
  LOCAL_PREALLOCATE_WORKSPACES: z.enum(['true', 'false']).default('false'),
  TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(3600).default(900),
  // jwt: agents verify offline; opaque: agents ask POST /oauth/introspect (D20).
  TOKEN_FORMAT: z.enum(TOKEN_FORMATS).default('jwt'),
  RATE_LIMIT_NEGOTIATE_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600),
  RATE_LIMIT_SESSION_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(6000),
  IDLE_TIMEOUT_SECONDS: z.coerce.number().int().min(10).default(900),
  HARD_TTL_SECONDS: z.coerce.number().int().min(60).default(28_800),
  LOG_LEVEL: envLogLevel,
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  // Guards GET /metrics when set (docs/operations.md); unset, /metrics is open.
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  // Hardening (docs/security.md, "Hardening").
  CORS_ALLOWED_ORIGINS: envOriginList,
  HSTS_MAX_AGE_SECONDS: z.coerce.number().int().min(0).max(63_072_000).default(0),
  TRUST_PROXY: z
    .string()
    .regex(/^(false|true|\d{1,2}|[0-9a-fA-F.:/, ]+|loopback|linklocal|uniquelocal)$/)
    .default('false'),
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(20),
  // How often the agents' usage counters are read (docs/admin.md "Usage").
  USAGE_COLLECT_INTERVAL_MS: z.coerce.number().int().min(1000).max(86_400_000).default(60_000),
  // The reconciler (docs/lifecycle.md "Reconciler"): between two rounds, and how long a broker
  // instance that stopped renewing its presence counts as alive.
  RECONCILE_INTERVAL_MS: z.coerce.number().int().min(1000).max(86_400_000).default(60_000),
  // How late the lease reaper may act on a timer (docs/lifecycle.md "What the reaper does").
  REAPER_INTERVAL_MS: z.coerce.number().int().min(1000).max(3_600_000).default(15_000),
  BROKER_PRESENCE_TTL_MS: z.coerce.number().int().min(1000).max(600_000).default(15_000),
  // Warm pool (docs/warm-pools.md): sandboxes each broker instance keeps ready; 0 turns it off.
  // Unset: EMBEDDED_WARM_POOL_SIZE on embedded defaults, else 0 (warmPoolSizeOf).
  WARM_POOL_SIZE: z.coerce.number().int().min(0).max(1000).optional(),
  // Address-space limit of one execute_code run (docs/execute-code.md "Limits").
  EXECUTE_CODE_MEMORY_MB: z.coerce.number().int().min(32).max(65_536).default(512),
  // Relay mode (docs/sandboxes.md): every data-plane route through the broker.
  DATAPLANE_RELAY: z.enum(['off', 'on']).default('off'),
});

const brokerRules: readonly EnvRule[] = [
  // Sandbox keys are encrypted under the master key; instances sharing a database must share it.
  (env) =>
    env['DATABASE_URL'] !== undefined && env['BROKER_MASTER_KEY'] === undefined
      ? 'BROKER_MASTER_KEY: is required when DATABASE_URL is set'
      : undefined,
  (env) =>
    (env['OIDC_ISSUER'] === undefined) !== (env['OIDC_AUDIENCE'] === undefined)
      ? 'OIDC_AUDIENCE: OIDC_ISSUER and OIDC_AUDIENCE go together'
      : undefined,
  // Relay mode hands clients the broker's own address: it must be one they can reach.
  (env) =>
    env['DATAPLANE_RELAY'] === 'on' && env['BROKER_PUBLIC_URL'] === undefined
      ? 'BROKER_PUBLIC_URL: is required when DATAPLANE_RELAY=on'
      : undefined,
];

export interface BrokerConfig {
  readonly host: string;
  readonly port: number;
  readonly publicUrl: string | undefined;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  /** Connections to a Postgres server (DATABASE_POOL_SIZE); absent: 10. */
  readonly databasePoolSize?: number;
  readonly redisUrl: string | undefined;
  /** Absent: `sbx`. */
  readonly redisKeyPrefix?: string;
  readonly redisCommandTimeoutMs?: number;
  readonly masterKey: string | undefined;
  readonly bootstrapApiKey: string | undefined;
  readonly oidc: { readonly issuer: string; readonly audience: string; readonly jwksUrl: string } | undefined;
  readonly provider: 'local' | 'docker' | 'kubernetes';
  /** SANDBOX_PROVIDER=docker|kubernetes: where and how sandboxes run (absent: the providers' defaults). */
  readonly containers?: ContainerProviderConfig;
  readonly localIsolation: 'auto' | 'bubblewrap' | 'none';
  readonly localPreallocateWorkspaces?: boolean;
  readonly tokenTtlSeconds: number;
  /** Default jwt (docs/architecture.md D20). */
  readonly tokenFormat?: TokenFormat;
  /** Per principal and minute: negotiations, and the other session calls. */
  readonly rateLimits: { readonly negotiatePerMinute: number; readonly sessionPerMinute: number };
  readonly idleTimeoutSeconds: number;
  readonly hardTtlSeconds: number;
  readonly logLevel: string;
  /** Absent: pretty on a terminal, JSON otherwise (main.ts decides, it sees standard output). */
  readonly logFormat?: 'json' | 'pretty';
  /** Absent: GET /metrics answers anyone who can reach the broker. */
  readonly metricsToken?: string | undefined;
  /** Absent (hand-built configurations): no CORS, no HSTS, trust proxy off. */
  readonly http?: BrokerHttpHardening;
  /** Failed authentications one client address may make per minute before 429 (absent: 20). */
  readonly authFailuresPerMinute?: number;
  /** Between two reads of the agents' usage counters (absent: 60 s). */
  readonly usageCollectIntervalMs?: number;
  /** Sandboxes of the default template this instance keeps ready (absent: 0, no pool; see warmPoolSizeOf). */
  readonly warmPoolSize?: number;
  /** Between two reconciler rounds, and this instance's presence TTL (absent: 60 s, 15 s). */
  readonly reconciler?: { readonly intervalMs: number; readonly presenceTtlMs: number };
  /** Between two lease reaper rounds (absent: 15 s). */
  readonly reaperIntervalMs?: number;
  /** execute_code's per-run memory limit, MiB (absent: 512). */
  readonly executeCodeMemoryMb?: number;
  /** Relay mode: data-plane traffic through the broker at this public URL (absent: off). */
  readonly dataplaneRelay?: { readonly publicUrl: string } | undefined;
}

export interface ContainerProviderConfig {
  readonly image: string;
  readonly docker: {
    readonly host: string | undefined;
    readonly network: string;
    readonly internalNetwork: string;
    readonly agentAddress: 'container' | 'published';
  };
  readonly kubernetes: {
    readonly namespace: string;
    readonly mode: 'pods' | 'agent-sandbox';
    readonly kubeconfigPath: string | undefined;
    readonly sandboxTemplate: string | undefined;
    readonly runtimeClassName: string | undefined;
    readonly storageClassName: string | undefined;
  };
}

/** CORS allowlist, HSTS and Express's `trust proxy` (docs/security.md, "Hardening"). */
export interface BrokerHttpHardening {
  readonly corsAllowedOrigins: readonly string[];
  /** 0: no Strict-Transport-Security header (set it only when clients reach the broker over TLS). */
  readonly hstsMaxAgeSeconds: number;
  /** Express `trust proxy`: false (default), true, a hop count, or addresses/subnets. */
  readonly trustProxy: boolean | number | string;
}

function trustProxyOf(value: string): boolean | number | string {
  if (value === 'false') return false;
  if (value === 'true') return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

/**
 * WARM_POOL_SIZE when set (0 included). Unset, only a broker on embedded defaults keeps a
 * pool: a deployment on Postgres sizes its pools itself (each instance keeps its own), and the
 * container providers keep none (a default would only log that it is ignored).
 */
function warmPoolSizeOf(e: {
  WARM_POOL_SIZE?: number;
  DATABASE_URL?: string;
  SANDBOX_PROVIDER: string;
}): number {
  if (e.WARM_POOL_SIZE !== undefined) return e.WARM_POOL_SIZE;
  return e.DATABASE_URL === undefined && e.SANDBOX_PROVIDER === 'local' ? EMBEDDED_WARM_POOL_SIZE : 0;
}

/** The broker's only reader of the environment. */
export function loadBrokerConfig(env: Environment = process.env): BrokerConfig {
  const e = parseEnv('broker', BrokerEnv, env, brokerRules);
  const oidc =
    e.OIDC_ISSUER !== undefined && e.OIDC_AUDIENCE !== undefined
      ? {
          issuer: e.OIDC_ISSUER,
          audience: e.OIDC_AUDIENCE,
          jwksUrl:
            e.OIDC_JWKS_URL ?? new URL('.well-known/jwks.json', `${e.OIDC_ISSUER.replace(/\/$/, '')}/`).href,
        }
      : undefined;
  return {
    host: e.HOST,
    port: e.PORT,
    publicUrl: e.BROKER_PUBLIC_URL,
    dataDir: path.resolve(e.BROKER_DATA_DIR),
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    redisCommandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    masterKey: e.BROKER_MASTER_KEY,
    bootstrapApiKey: e.BROKER_BOOTSTRAP_API_KEY,
    oidc,
    provider: e.SANDBOX_PROVIDER,
    containers: {
      image: e.SANDBOX_IMAGE,
      docker: {
        host: e.DOCKER_HOST,
        network: e.DOCKER_NETWORK,
        internalNetwork: e.DOCKER_INTERNAL_NETWORK,
        agentAddress: e.DOCKER_AGENT_ADDRESS,
      },
      kubernetes: {
        namespace: e.K8S_NAMESPACE,
        mode: e.K8S_MODE,
        kubeconfigPath: e.KUBECONFIG,
        sandboxTemplate: e.K8S_SANDBOX_TEMPLATE,
        runtimeClassName: e.K8S_RUNTIME_CLASS,
        storageClassName: e.K8S_STORAGE_CLASS,
      },
    },
    localIsolation: e.LOCAL_ISOLATION,
    localPreallocateWorkspaces: e.LOCAL_PREALLOCATE_WORKSPACES === 'true',
    tokenTtlSeconds: e.TOKEN_TTL_SECONDS,
    tokenFormat: e.TOKEN_FORMAT,
    rateLimits: {
      negotiatePerMinute: e.RATE_LIMIT_NEGOTIATE_PER_MINUTE,
      sessionPerMinute: e.RATE_LIMIT_SESSION_PER_MINUTE,
    },
    idleTimeoutSeconds: e.IDLE_TIMEOUT_SECONDS,
    hardTtlSeconds: e.HARD_TTL_SECONDS,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    metricsToken: e.METRICS_TOKEN,
    http: {
      corsAllowedOrigins: e.CORS_ALLOWED_ORIGINS,
      hstsMaxAgeSeconds: e.HSTS_MAX_AGE_SECONDS,
      trustProxy: trustProxyOf(e.TRUST_PROXY),
    },
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    usageCollectIntervalMs: e.USAGE_COLLECT_INTERVAL_MS,
    reconciler: { intervalMs: e.RECONCILE_INTERVAL_MS, presenceTtlMs: e.BROKER_PRESENCE_TTL_MS },
    warmPoolSize: warmPoolSizeOf(e),
    reaperIntervalMs: e.REAPER_INTERVAL_MS,
    executeCodeMemoryMb: e.EXECUTE_CODE_MEMORY_MB,
    dataplaneRelay:
      e.DATAPLANE_RELAY === 'on' && e.BROKER_PUBLIC_URL !== undefined
        ? { publicUrl: e.BROKER_PUBLIC_URL }
        : undefined,
  };
}
