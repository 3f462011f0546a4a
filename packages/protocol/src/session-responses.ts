import { z } from 'zod';
import { SandboxState } from './lifecycle.js';
import {
  BearerToken,
  HttpUrl,
  Id,
  PositiveSeconds,
  ProviderName,
  Timestamp,
  WorkspacePath,
  WsUrl,
} from './primitives.js';
import { GrantedCapabilityList } from './scopes.js';
import { ScopeType } from './sessions.js';

/**
 * Responses of `/v1/sandbox/sessions…` (docs/protocol.md#route-families).
 *
 * Response schemas are not strict: a client must keep working when a newer server
 * adds fields (docs/protocol.md#compatibility-rules), so unknown keys are stripped, not rejected.
 * Capabilities in responses are parsed with aliases accepted and come out canonical;
 * the broker always writes canonical names (`fs:rw`, not `fs_write`).
 */

/** MVP `sandbox` object: where the dataplane is. */
export const SandboxCoordinates = z.object({
  id: Id,
  provider: ProviderName,
  http_base_url: HttpUrl,
  ws_base_url: WsUrl,
  workspace_path: WorkspacePath,
});
export type SandboxCoordinates = z.infer<typeof SandboxCoordinates>;

const mvpFields = {
  session_id: Id,
  thread_id: Id,
  sandbox: SandboxCoordinates,
  token: BearerToken,
  expires_at: Timestamp,
};

/**
 * MVP response of `POST /v1/sandbox/sessions`, also the shape handed over out of band
 * (docs/protocol.md#mvp-routes).
 */
export const MvpSessionResponse = z.object(mvpFields);
export type MvpSessionResponse = z.infer<typeof MvpSessionResponse>;

export const BindingScope = z.object({ type: ScopeType, id: Id });
export type BindingScope = z.infer<typeof BindingScope>;

export const Binding = z.object({
  id: Id,
  scope: BindingScope,
  sandbox_id: Id,
  provider: ProviderName,
  state: SandboxState,
  lease_expires_at: Timestamp,
});
export type Binding = z.infer<typeof Binding>;

export const Dataplane = z.object({
  http_base_url: HttpUrl,
  ws_base_url: WsUrl,
  workspace_path: WorkspacePath,
});
export type Dataplane = z.infer<typeof Dataplane>;

export const Credentials = z.object({
  token_type: z.literal('Bearer'),
  access_token: BearerToken,
  expires_at: Timestamp,
  granted_capabilities: GrantedCapabilityList,
});
export type Credentials = z.infer<typeof Credentials>;

export const ISOLATION_MODES = ['bubblewrap', 'container', 'none'] as const;
export const Isolation = z.enum(ISOLATION_MODES);
export type Isolation = z.infer<typeof Isolation>;

export const SessionPolicy = z.object({
  idle_timeout_seconds: PositiveSeconds,
  hard_ttl_seconds: PositiveSeconds,
  isolation: Isolation.optional(),
});
export type SessionPolicy = z.infer<typeof SessionPolicy>;

const fullFields = {
  binding: Binding,
  dataplane: Dataplane,
  credentials: Credentials,
  policy: SessionPolicy,
};

/** Full response of `POST /v1/sandbox/sessions` (docs/protocol.md#full-protocol). */
export const FullSessionResponse = z.object(fullFields);
export type FullSessionResponse = z.infer<typeof FullSessionResponse>;

type Issue = { path: (string | number)[]; message: string };

/** MVP mirror fields must say what the full fields say. */
function mirrorIssues(v: {
  binding: Binding;
  dataplane: Dataplane;
  session_id: string;
  thread_id?: string | undefined;
  sandbox: SandboxCoordinates;
}): Issue[] {
  const issues: Issue[] = [];
  const same = (path: (string | number)[], a: unknown, b: unknown, what: string): void => {
    if (a !== b) issues.push({ path, message: `must equal ${what}` });
  };
  same(['session_id'], v.session_id, v.binding.id, 'binding.id');
  same(['sandbox', 'id'], v.sandbox.id, v.binding.sandbox_id, 'binding.sandbox_id');
  same(['sandbox', 'provider'], v.sandbox.provider, v.binding.provider, 'binding.provider');
  same(
    ['sandbox', 'http_base_url'],
    v.sandbox.http_base_url,
    v.dataplane.http_base_url,
    'dataplane.http_base_url',
  );
  same(['sandbox', 'ws_base_url'], v.sandbox.ws_base_url, v.dataplane.ws_base_url, 'dataplane.ws_base_url');
  same(
    ['sandbox', 'workspace_path'],
    v.sandbox.workspace_path,
    v.dataplane.workspace_path,
    'dataplane.workspace_path',
  );
  if (v.binding.scope.type === 'thread') {
    same(['thread_id'], v.thread_id, v.binding.scope.id, 'binding.scope.id for a thread scope');
  } else if (v.thread_id !== undefined) {
    issues.push({ path: ['thread_id'], message: 'must be absent unless binding.scope.type is "thread"' });
  }
  return issues;
}

/**
 * What the broker returns from `POST /v1/sandbox/sessions`: the full response PLUS the
 * MVP fields, so an MVP client that reads `session_id/thread_id/sandbox/token/expires_at`
 * keeps working. `thread_id` is present exactly when the binding's scope is a thread
 * (MVP clients only ever ask for threads). The mirrors must agree with the full fields;
 * build one with `toSessionResponse` rather than by hand.
 */
export const SessionResponse = z
  .object({ ...fullFields, ...mvpFields, thread_id: Id.optional() })
  .superRefine((v, ctx) => {
    for (const issue of mirrorIssues(v)) ctx.addIssue({ code: 'custom', ...issue });
    if (v.token !== v.credentials.access_token) {
      ctx.addIssue({ code: 'custom', path: ['token'], message: 'must equal credentials.access_token' });
    }
    if (v.expires_at !== v.credentials.expires_at) {
      ctx.addIssue({ code: 'custom', path: ['expires_at'], message: 'must equal credentials.expires_at' });
    }
  });
export type SessionResponse = z.infer<typeof SessionResponse>;

function mvpMirror(full: { binding: Binding; dataplane: Dataplane }): {
  session_id: string;
  thread_id?: string;
  sandbox: SandboxCoordinates;
} {
  return {
    session_id: full.binding.id,
    ...(full.binding.scope.type === 'thread' ? { thread_id: full.binding.scope.id } : {}),
    sandbox: {
      id: full.binding.sandbox_id,
      provider: full.binding.provider,
      http_base_url: full.dataplane.http_base_url,
      ws_base_url: full.dataplane.ws_base_url,
      workspace_path: full.dataplane.workspace_path,
    },
  };
}

/** Adds the MVP mirror fields to a full response. */
export function toSessionResponse(full: FullSessionResponse): SessionResponse {
  return {
    ...full,
    ...mvpMirror(full),
    token: full.credentials.access_token,
    expires_at: full.credentials.expires_at,
  };
}

/** `GET /v1/sandbox/sessions/{binding_id}`: the binding without credentials (a GET mints no token). */
export const GetBindingResponse = z
  .object({
    binding: Binding,
    dataplane: Dataplane,
    policy: SessionPolicy,
    session_id: Id,
    thread_id: Id.optional(),
    sandbox: SandboxCoordinates,
  })
  .superRefine((v, ctx) => {
    for (const issue of mirrorIssues(v)) ctx.addIssue({ code: 'custom', ...issue });
  });
export type GetBindingResponse = z.infer<typeof GetBindingResponse>;

export function toGetBindingResponse(view: {
  binding: Binding;
  dataplane: Dataplane;
  policy: SessionPolicy;
}): GetBindingResponse {
  return { binding: view.binding, dataplane: view.dataplane, policy: view.policy, ...mvpMirror(view) };
}

/** MVP `POST /v1/sandbox/sessions/{session_id}/refresh` → `{token, expires_at}`. */
export const MvpRefreshResponse = z.object({ token: BearerToken, expires_at: Timestamp });
export type MvpRefreshResponse = z.infer<typeof MvpRefreshResponse>;

/**
 * Full `POST /v1/sandbox/sessions/{binding_id}/refresh-token` → the credentials shape
 * plus the MVP `token` (mirror of `access_token`; `expires_at` is shared). The broker
 * answers both refresh routes with this, which MVP clients parse as `{token, expires_at}`.
 */
export const RefreshTokenResponse = Credentials.extend({ token: BearerToken }).superRefine((v, ctx) => {
  if (v.token !== v.access_token) {
    ctx.addIssue({ code: 'custom', path: ['token'], message: 'must equal access_token' });
  }
});
export type RefreshTokenResponse = z.infer<typeof RefreshTokenResponse>;

export function toRefreshTokenResponse(credentials: Credentials): RefreshTokenResponse {
  return { ...credentials, token: credentials.access_token };
}

/**
 * `POST /v1/sandbox/sessions/{binding_id}/heartbeat` (body `{}`) → the extended lease. A
 * heartbeat on an idle or suspended sandbox resumes it; a resumed agent may listen at new
 * addresses, so the current `dataplane` comes back too.
 */
export const HeartbeatResponse = z.object({
  lease_expires_at: Timestamp,
  state: SandboxState,
  dataplane: Dataplane.optional(),
});
export type HeartbeatResponse = z.infer<typeof HeartbeatResponse>;
