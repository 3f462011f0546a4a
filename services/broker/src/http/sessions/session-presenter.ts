// Domain results in the protocol's wire shapes (packages/protocol is the one
// source of those shapes; the builders there keep MVP mirrors consistent).
import {
  SbxError,
  toGetBindingResponse,
  toRefreshTokenResponse,
  toSessionResponse,
  toTimestamp,
  type Binding,
  type Credentials,
  type Dataplane,
  type GetBindingResponse,
  type HeartbeatResponse,
  type RefreshTokenResponse,
  type SessionPolicy,
  type SessionResponse,
  type ThreadHeartbeatResponse,
  type ThreadRefreshResponse,
  type ThreadSandboxResponse,
} from '@sbx/protocol';
import type { SessionState, SessionWithToken } from '../../domain/sessions/session-core.js';
import type { Heartbeat } from '../../domain/sessions/session-holder.js';
import { refreshBefore } from '../../domain/sessions/session-policy.js';
import type { SandboxRecord } from '../../store/index.js';

function bindingOf(session: SessionState): Binding {
  const { binding, sandbox } = session;
  return {
    id: binding.id,
    scope: { type: binding.scopeType, id: binding.scopeId },
    sandbox_id: sandbox.id,
    provider: sandbox.provider,
    state: sandbox.state,
    lease_expires_at: toTimestamp(sandbox.leaseExpiresAt),
  };
}

function dataplaneOf(sandbox: SandboxRecord): Dataplane {
  if (sandbox.httpBaseUrl === null || sandbox.wsBaseUrl === null) {
    throw new SbxError('INTERNAL', `sandbox ${sandbox.id} is serving without a dataplane`);
  }
  return {
    http_base_url: sandbox.httpBaseUrl,
    ws_base_url: sandbox.wsBaseUrl,
    workspace_path: sandbox.workspacePath,
  };
}

function policyOf(session: SessionState): SessionPolicy {
  return {
    idle_timeout_seconds: session.policy.idleTimeoutSeconds,
    hard_ttl_seconds: session.policy.hardTtlSeconds,
    isolation: session.isolation,
  };
}

function credentialsOf(session: SessionWithToken): Credentials {
  return {
    token_type: 'Bearer',
    access_token: session.token.token,
    expires_at: toTimestamp(session.token.expiresAt),
    granted_capabilities: [...session.token.scopes],
  };
}

/** `POST /v1/sandbox/sessions`: the full response with the MVP fields mirrored in. */
export function sessionBody(session: SessionWithToken): SessionResponse {
  return toSessionResponse({
    binding: bindingOf(session),
    dataplane: dataplaneOf(session.sandbox),
    credentials: credentialsOf(session),
    policy: policyOf(session),
  });
}

export function getBindingBody(session: SessionState): GetBindingResponse {
  return toGetBindingResponse({
    binding: bindingOf(session),
    dataplane: dataplaneOf(session.sandbox),
    policy: policyOf(session),
  });
}

/** Both refresh routes: MVP clients read `{token, expires_at}` of it. */
export function refreshBody(session: SessionWithToken): RefreshTokenResponse {
  return toRefreshTokenResponse(credentialsOf(session));
}

export function heartbeatBody(heartbeat: Heartbeat): HeartbeatResponse {
  return {
    lease_expires_at: toTimestamp(heartbeat.leaseExpiresAt),
    state: heartbeat.state,
    ...(hasDataplane(heartbeat.sandbox) ? { dataplane: dataplaneOf(heartbeat.sandbox) } : {}),
  };
}

export function threadSandboxBody(session: SessionWithToken): ThreadSandboxResponse {
  const dataplane = dataplaneOf(session.sandbox);
  return {
    sandbox_id: session.sandbox.id,
    endpoints: { http: dataplane.http_base_url, ws: dataplane.ws_base_url },
    workspace_path: dataplane.workspace_path,
    ...threadRefreshBody(session),
    scopes: [...session.token.scopes],
  };
}

export function threadRefreshBody(session: SessionWithToken): ThreadRefreshResponse {
  const { token } = session;
  return {
    token: token.token,
    expires_at: toTimestamp(token.expiresAt),
    refresh_before: toTimestamp(refreshBefore(token.expiresAt, token.ttlSeconds)),
  };
}

export function threadHeartbeatBody(heartbeat: Heartbeat): ThreadHeartbeatResponse {
  return {
    sandbox_id: heartbeat.sandboxId,
    lease_expires_at: toTimestamp(heartbeat.leaseExpiresAt),
    state: heartbeat.state,
    ...(hasDataplane(heartbeat.sandbox) ? { endpoints: endpointsOf(heartbeat.sandbox) } : {}),
  };
}

function hasDataplane(sandbox: Heartbeat['sandbox']): boolean {
  return sandbox.httpBaseUrl !== null && sandbox.wsBaseUrl !== null;
}

function endpointsOf(sandbox: Heartbeat['sandbox']): { http: string; ws: string } {
  const dataplane = dataplaneOf(sandbox);
  return { http: dataplane.http_base_url, ws: dataplane.ws_base_url };
}
