import { SbxError, type AgentProcess, type AgentShell, type AgentUsage } from '@sbx/protocol';
import type { SigningKey } from '@sbx/tokens';
import type { SandboxLimits } from './sandbox-limits.js';

/** What a provider needs to bring one sandbox up. */
export interface SandboxSpec {
  readonly sandboxId: string;
  readonly tenantId: string;
  /** The sandbox's own key: the agent verifies capability tokens with it, offline. */
  readonly signingKey: SigningKey;
  /** The `iss` the agent accepts. */
  readonly tokenIssuer: string;
  /** 'off' when the tenant's environment is internal-only: user processes see no network. */
  readonly network: 'on' | 'off';
  /** From the tenant's policy; omitted: the provider's defaults. */
  readonly limits?: SandboxLimits;
  /** The template it is made from; container providers map it to an image, the local provider ignores it. */
  readonly template?: string;
  /**
   * The creating client's policy row (docs/protocol.md#callers-and-caller-scopes): variables set for
   * every user process, e.g. a base URL pointing at the sidecar.
   */
  readonly environment?: Readonly<Record<string, string>>;
  /** The client's credential-broker sidecar; undefined: none (a client without a row gets none). */
  readonly sidecar?: SidecarSpec;
}

export interface WarmClaim {
  readonly tenantId: string;
  /** The creating client's variables (SandboxSpec.environment); empty without a client. */
  readonly environment: Readonly<Record<string, string>>;
}

/** A container run next to the agent, sharing its network, holding a credential the user code never sees. */
export interface SidecarSpec {
  readonly image: string;
  /** A pod-scoped JWT minted by the broker (audience and scopes from the client's policy row). */
  readonly token: string;
}

/** Where clients reach the sandbox's agent. */
export interface Dataplane {
  /** e.g. `http://127.0.0.1:41234`, no trailing slash. */
  readonly httpBaseUrl: string;
  /** Same origin as `httpBaseUrl` with the ws scheme. */
  readonly wsBaseUrl: string;
  /**
   * Where the sandbox's processes see the workspace, also their HOME and default cwd:
   * `/workspace` wherever they are confined; the host path only without isolation.
   */
  readonly workspacePath: string;
}

/** Tokens the sandbox's agent must refuse from now on (docs/security.md#revocation). */
export interface Revocation {
  /** Each revoked jti with its token's expiry: entries are dropped once the token expired anyway. */
  readonly jtis: readonly { readonly jti: string; readonly expiresAt: Date }[];
  /** Tokens issued before this instant are refused; a newer one also retires the previous key at once. */
  readonly notBefore?: Date;
}

/**
 * What a sandbox's agent says of itself: counters since it started (a new `bootId`
 * when it restarted, its counters then begin again at 0) and what runs in it now.
 */
export interface AgentReport {
  readonly bootId: string;
  readonly usage: AgentUsage;
  readonly processes: readonly AgentProcess[];
  readonly shells: readonly AgentShell[];
}

export type ProviderSandboxStatus = 'starting' | 'running' | 'stopped' | 'failed' | 'missing';

/**
 * One interface for every place sandboxes run (local processes today; containers and
 * pods later). Every method fails with `SbxError`: `PROVIDER_UNAVAILABLE` (cause kept)
 * when the backend cannot do it, `SANDBOX_NOT_FOUND` for an unknown sandbox where one
 * is needed, `CONFLICT` when `create` names a sandbox that already exists.
 */
export interface SandboxProvider {
  /** e.g. 'local'; stored next to the sandbox. */
  readonly name: string;
  /** What confines user processes; 'none' means they run as the broker's user. */
  readonly isolation: 'bubblewrap' | 'container' | 'none';
  /** Resolves once the agent answers its health check; a sandbox that never does is removed. */
  create(spec: SandboxSpec): Promise<{ providerRef: string; dataplane: Dataplane }>;
  /** Resumes a stopped (or failed) sandbox with its workspace; a running one answers as is. */
  start(sandboxId: string): Promise<Dataplane>;
  /** Suspends: the agent and its processes end, the workspace stays. */
  stop(sandboxId: string): Promise<void>;
  /** Ends the agent and deletes the workspace; a sandbox that is already gone is fine. */
  destroy(sandboxId: string): Promise<void>;
  status(sandboxId: string): Promise<ProviderSandboxStatus>;
  /**
   * Every sandbox id this provider holds, running or stopped: what the reconciler compares with
   * the database (a sandbox without a row is destroyed).
   */
  list(): Promise<readonly string[]>;
  /** The agent's report; undefined when its agent is not running or does not answer within ~2 s. */
  inspect(sandboxId: string): Promise<AgentReport | undefined>;
  /**
   * Adds to the sandbox's revocation list; its agent refuses those tokens within 1 s, open
   * WebSockets included, running or not (a stopped agent reads the list when it starts).
   */
  revoke(sandboxId: string, revocation: Revocation): Promise<void>;
  /**
   * Hands a warm sandbox (made ahead for nobody, docs/warm-pools.md) to its claimant: the
   * client's variables reach the next user process, without restarting the agent. Absent:
   * the provider keeps no warm pools.
   */
  claim?(sandboxId: string, claim: WarmClaim): Promise<void>;
  /** Replaces the sandbox's key; followed by `revoke({notBefore})` the old key gets no grace. */
  rotateKey(sandboxId: string, key: SigningKey): Promise<void>;
  /** Broker shutdown: ends every agent this provider started; later calls are refused. */
  close(): Promise<void>;
}

/**
 * What a provider that restarts crashed agents did about one (the local provider,
 * agent-restarts.ts). Without one, the exit is final and the broker fails the sandbox.
 */
export type AgentCrashReport =
  /** It is started again on its workspace after `delayMs`; `crashes` within the window so far. */
  | { readonly kind: 'restarting'; readonly crashes: number; readonly delayMs: number }
  /** It runs again, on its workspace, listening at `dataplane` (the old port when it was free). */
  | { readonly kind: 'restarted'; readonly crashes: number; readonly dataplane: Dataplane }
  /**
   * It stays down, its workspace kept: `crashes` within `windowMs` (a crash loop), or the
   * last restart failed for good (`error`: its workspace is gone).
   */
  | {
      readonly kind: 'gave_up';
      readonly crashes: number;
      readonly windowMs: number;
      readonly error?: string;
    };

/**
 * Called when a sandbox's agent ends without being asked to: with a report when the
 * provider restarts it (or gave up restarting it), else the broker marks it failed.
 */
export type AgentExitListener = (
  sandboxId: string,
  code: number | null,
  signal: NodeJS.Signals | null,
  report?: AgentCrashReport,
) => void;

export function providerUnavailable(message: string, cause?: unknown): SbxError {
  return new SbxError('PROVIDER_UNAVAILABLE', message, cause === undefined ? {} : { cause });
}

export function sandboxNotFound(sandboxId: string): SbxError {
  return new SbxError('SANDBOX_NOT_FOUND', `sandbox ${sandboxId} does not exist`, {
    details: { sandbox_id: sandboxId },
  });
}

export function sandboxExists(sandboxId: string): SbxError {
  return new SbxError('CONFLICT', `sandbox ${sandboxId} already exists`, {
    details: { sandbox_id: sandboxId },
  });
}

/** Same shape the agent accepts for SANDBOX_ID; also keeps ids safe as directory names. */
const SANDBOX_ID = /^[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,199}$/;

export function assertSandboxId(sandboxId: string): void {
  if (!SANDBOX_ID.test(sandboxId))
    throw new SbxError(
      'BAD_REQUEST',
      'sandbox id must be 1-200 letters, digits, _ . : - (not starting with .)',
    );
}
