// Relay mode (docs/sandboxes.md "Relay mode"): every data-plane route of a sandbox under
// `/v1/sandboxes/{id}/dp/…`, HTTP and WebSocket, carried to its agent. The credential is
// either a capability token of that sandbox (what session responses hand out; checked here,
// revocation included, then passed on) or the caller's own API key or OIDC token, which
// must hold the caller scope of the operation (the broker then mints the agent token).
import { randomUUID } from 'node:crypto';
import { SbxError } from '@sbx/protocol';
import { isOpaqueToken, parseCompactToken } from '@sbx/tokens';
import type { AuditContext } from '../../domain/audit/audit-trail.js';
import type { CallerAuthenticator } from '../../domain/auth/authenticate-caller.js';
import type { AuthFailureLimiter } from '../../domain/rate-limit/auth-failure-limiter.js';
import { withFailureLimit } from '../auth/limited-callers.js';
import { requireCallerScope } from '../../domain/auth/principal.js';
import { checkCapability, type CapabilityCheckDeps } from '../../domain/sandboxes/capability-check.js';
import { dataplaneOperation } from '../../domain/sandboxes/dataplane-operation.js';
import type { RelayTarget, SandboxResources } from '../../domain/sandboxes/sandbox-resources.js';
import type { SandboxResourceQueries } from '../../store/sandbox-resource-queries.js';

export interface DataplaneRelayDeps {
  readonly resources: SandboxResources;
  readonly queries: Pick<SandboxResourceQueries, 'find'>;
  readonly capabilities: CapabilityCheckDeps;
  readonly callers: CallerAuthenticator;
  /** Refused caller credentials count against the client address (limited-callers.ts). */
  readonly failures?: AuthFailureLimiter | undefined;
}

export interface ResolvedRelay {
  readonly target: RelayTarget;
  /** Who asked: the caller's principal; absent for a capability token (its jti names it). */
  readonly context?: AuditContext;
}

/** A credential the sandbox's agent would accept itself: opaque, or a JWT whose audience is the sandbox. */
function isCapabilityOf(credential: string, sandboxId: string): boolean {
  if (isOpaqueToken(credential)) return true;
  if (credential.startsWith('sbk_') || credential.split('.').length !== 3) return false;
  try {
    return parseCompactToken(credential)['aud'] === sandboxId;
  } catch {
    return false;
  }
}

export async function resolveRelay(
  deps: DataplaneRelayDeps,
  call: {
    sandboxId: string;
    credential: string;
    method: string;
    agentPath: string;
    requestId?: string;
    /** The client's address, for the failed-credential limit. */
    address: string;
  },
): Promise<ResolvedRelay> {
  const operation = dataplaneOperation(call.method, call.agentPath);
  if (operation === undefined) throw new SbxError('NOT_FOUND', `no data-plane route ${call.agentPath}`);
  const requestId = call.requestId ?? `req_${randomUUID()}`;
  if (isCapabilityOf(call.credential, call.sandboxId)) {
    // No owner filter: the token itself proves access to this one sandbox.
    const sandbox = await deps.queries.find({}, call.sandboxId);
    if (sandbox === null) throw new SbxError('UNAUTHENTICATED', 'capability token refused: unknown sandbox');
    const { claims } = await checkCapability(deps.capabilities, sandbox, call.credential);
    // A suspended sandbox is resumed first (423 while it starts), as for a caller credential.
    const running = await deps.resources.tokenTarget(sandbox, claims, requestId);
    return { target: { ...running, token: call.credential, jti: claims.jti } };
  }
  const callers = withFailureLimit(deps.callers, deps.failures, call.address);
  const principal = await callers.authenticate(`Bearer ${call.credential}`);
  requireCallerScope(principal, operation.callerScope);
  const context = { requestId, principal };
  return { target: await deps.resources.relayTarget(context, call.sandboxId, operation.capability), context };
}
