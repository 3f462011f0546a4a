import { z } from 'zod';
import { ADMIN_ROUTES } from './admin-routes.js';
import { WhoamiResponse } from './caller.js';
import { SANDBOX_RESOURCE_ROUTES } from './sandbox-resource-routes.js';
import type { ErrorCode } from './errors.js';
import { ExecuteCodeRequest, ExecuteCodeResult, SessionExecuteCodeRequest } from './execute-code.js';
import { RevocationRequest, RevocationResponse } from './revocation.js';
import {
  IntrospectionRequest,
  IntrospectionResponse,
  TokenExchangeRequest,
  TokenExchangeResponse,
} from './oauth.js';
import {
  GetBindingResponse,
  HeartbeatResponse,
  RefreshTokenResponse,
  SessionResponse,
} from './session-responses.js';
import { EmptyBody, NegotiateSessionRequest, RefreshTokenRequest, SessionPathParams } from './sessions.js';
import {
  ThreadHeartbeatRequest,
  ThreadHeartbeatResponse,
  ThreadPathParams,
  ThreadRefreshRequest,
  ThreadRefreshResponse,
  ThreadSandboxRequest,
  ThreadSandboxResponse,
} from './threads.js';

/**
 * The broker's HTTP routes with their schemas: what the broker validates, what the SDK
 * sends, and what an OpenAPI document is generated from. `body` absent: the route takes
 * no body. `response` absent: `204 No Content`. Every error is an `ErrorEnvelope` whose
 * HTTP status is `ERROR_TABLE[code].status`; `errors` lists the codes the route may answer
 * (docs/protocol.md#error-table; BAD_REQUEST wherever there is a body or path parameter).
 */
export interface RouteSpec {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI-style path template. */
  readonly path: string;
  readonly summary: string;
  readonly params: z.ZodType;
  /** Query-string parameters (listings); absent: none. */
  readonly query?: z.ZodType;
  readonly body?: z.ZodType;
  /**
   * The body's media type when it is not JSON (`application/x-www-form-urlencoded` for the
   * OAuth routes). A JSON body sent without `Content-Type: application/json` is 415
   * UNSUPPORTED_MEDIA_TYPE on every route that takes one; the document adds it there.
   */
  readonly consumes?: 'application/x-www-form-urlencoded';
  readonly response?: z.ZodType;
  /** The success status when there is a response; default 200. */
  readonly status?: 200 | 201;
  /** A streamed, non-JSON success body (200) in one of these media types; `response` is then absent. */
  readonly produces?: readonly string[];
  readonly errors: readonly ErrorCode[];
}

/** A route without path parameters. */
export const NoPathParams = z.strictObject({});

const AUTH_ERRORS = ['UNAUTHENTICATED', 'FORBIDDEN'] as const satisfies readonly ErrorCode[];

/** Negotiation with an Idempotency-Key: reused with another body (422), or the first still running (409). */
const IDEMPOTENCY_ERRORS = ['IDEMPOTENCY_KEY_REUSED', 'CONFLICT'] as const satisfies readonly ErrorCode[];

/** What minting a token for an existing binding may run into (its sandbox resuming, policies changed). */
const TOKEN_ERRORS = [
  'CAPABILITY_DENIED',
  'SANDBOX_STARTING',
  'RATE_LIMITED',
  'PROVIDER_UNAVAILABLE',
] as const satisfies readonly ErrorCode[];

export const ROUTES = {
  negotiateSession: {
    method: 'POST',
    path: '/v1/sandbox/sessions',
    summary: 'Create or get a sandbox session (MVP or full body); Idempotency-Key recommended for ensure',
    params: NoPathParams,
    body: NegotiateSessionRequest,
    response: SessionResponse,
    errors: [
      'BAD_REQUEST',
      ...AUTH_ERRORS,
      'CAPABILITY_DENIED',
      'SESSION_NOT_FOUND',
      'BINDING_NOT_FOUND',
      'SESSION_CONFLICT',
      'BINDING_CONFLICT',
      ...IDEMPOTENCY_ERRORS,
      'SANDBOX_STARTING',
      'RATE_LIMITED',
      'PROVIDER_UNAVAILABLE',
      'BACKEND_UNAVAILABLE',
    ],
  },
  getBinding: {
    method: 'GET',
    path: '/v1/sandbox/sessions/{session_id}',
    summary: 'Inspect a binding (no credentials)',
    params: SessionPathParams,
    response: GetBindingResponse,
    errors: [
      'BAD_REQUEST',
      ...AUTH_ERRORS,
      'SESSION_NOT_FOUND',
      'SESSION_EXPIRED',
      'SANDBOX_STARTING',
      'RATE_LIMITED',
    ],
  },
  refreshSession: {
    method: 'POST',
    path: '/v1/sandbox/sessions/{session_id}/refresh',
    summary: 'MVP token refresh; MVP clients read {token, expires_at} of the response',
    params: SessionPathParams,
    body: RefreshTokenRequest,
    response: RefreshTokenResponse,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'SESSION_NOT_FOUND', 'SESSION_EXPIRED', ...TOKEN_ERRORS],
  },
  refreshToken: {
    method: 'POST',
    path: '/v1/sandbox/sessions/{session_id}/refresh-token',
    summary: 'Full token refresh: new credentials, lease unchanged',
    params: SessionPathParams,
    body: RefreshTokenRequest,
    response: RefreshTokenResponse,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'BINDING_NOT_FOUND', 'SESSION_EXPIRED', ...TOKEN_ERRORS],
  },
  heartbeatSession: {
    method: 'POST',
    path: '/v1/sandbox/sessions/{session_id}/heartbeat',
    summary: 'Extend the lease; the token is unchanged',
    params: SessionPathParams,
    body: EmptyBody,
    response: HeartbeatResponse,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'BINDING_NOT_FOUND', 'SESSION_EXPIRED', 'RATE_LIMITED'],
  },
  releaseSession: {
    method: 'DELETE',
    path: '/v1/sandbox/sessions/{session_id}',
    summary: 'Release the binding; the last binding of a sandbox destroys it',
    params: SessionPathParams,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'SESSION_NOT_FOUND', 'RATE_LIMITED'],
  },
  threadSandbox: {
    method: 'POST',
    path: '/threads/{thread_id}/sandbox',
    summary: "Negotiate access to the thread's sandbox (ensure)",
    params: ThreadPathParams,
    body: ThreadSandboxRequest,
    response: ThreadSandboxResponse,
    errors: [
      'BAD_REQUEST',
      ...AUTH_ERRORS,
      'CAPABILITY_DENIED',
      'BINDING_CONFLICT',
      ...IDEMPOTENCY_ERRORS,
      'SANDBOX_STARTING',
      'RATE_LIMITED',
      'PROVIDER_UNAVAILABLE',
    ],
  },
  threadRefresh: {
    method: 'POST',
    path: '/threads/{thread_id}/sandbox/refresh',
    summary: 'Reissue the token, proving possession of the current one',
    params: ThreadPathParams,
    body: ThreadRefreshRequest,
    response: ThreadRefreshResponse,
    errors: [
      'BAD_REQUEST',
      ...AUTH_ERRORS,
      'BINDING_NOT_FOUND',
      'BINDING_CONFLICT',
      'SESSION_EXPIRED',
      ...TOKEN_ERRORS,
    ],
  },
  threadHeartbeat: {
    method: 'POST',
    path: '/threads/{thread_id}/sandbox/heartbeat',
    summary: "Extend the sandbox's lease",
    params: ThreadPathParams,
    body: ThreadHeartbeatRequest,
    response: ThreadHeartbeatResponse,
    errors: [
      'BAD_REQUEST',
      ...AUTH_ERRORS,
      'BINDING_NOT_FOUND',
      'BINDING_CONFLICT',
      'SESSION_EXPIRED',
      'RATE_LIMITED',
    ],
  },
  threadRelease: {
    method: 'DELETE',
    path: '/threads/{thread_id}/sandbox',
    summary: "Release the caller's binding on the thread; the last binding destroys the sandbox",
    params: ThreadPathParams,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'BINDING_NOT_FOUND', 'RATE_LIMITED'],
  },
  tokenExchange: {
    method: 'POST',
    path: '/oauth/token',
    summary:
      'RFC 8693 token exchange: a narrower capability token (form-encoded body; errors in the RFC 6749 §5.2 shape)',
    params: NoPathParams,
    body: TokenExchangeRequest,
    consumes: 'application/x-www-form-urlencoded',
    response: TokenExchangeResponse,
    errors: ['BAD_REQUEST', 'UNAUTHENTICATED', 'RATE_LIMITED'],
  },
  tokenIntrospection: {
    method: 'POST',
    path: '/oauth/introspect',
    summary:
      "RFC 7662 introspection of an opaque token by its sandbox's agent (HTTP Basic: sandbox id and derived secret)",
    params: NoPathParams,
    body: IntrospectionRequest,
    consumes: 'application/x-www-form-urlencoded',
    response: IntrospectionResponse,
    errors: ['BAD_REQUEST', 'UNAUTHENTICATED'],
  },
  executeCode: {
    method: 'POST',
    path: '/v1/execute_code',
    summary:
      "execute_code for agents: run code in the thread's (or scope's) sandbox; 200 with the tool's result whenever the call was accepted",
    params: NoPathParams,
    body: ExecuteCodeRequest,
    response: ExecuteCodeResult,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'RATE_LIMITED'],
  },
  sessionExecuteCode: {
    method: 'POST',
    path: '/v1/sandbox/sessions/{session_id}/execute_code',
    summary: "execute_code in the session's sandbox (the caller's binding; its token needs process)",
    params: SessionPathParams,
    body: SessionExecuteCodeRequest,
    response: ExecuteCodeResult,
    errors: [
      'BAD_REQUEST',
      ...AUTH_ERRORS,
      'SESSION_NOT_FOUND',
      'BINDING_NOT_FOUND',
      'SESSION_EXPIRED',
      'RATE_LIMITED',
    ],
  },
  whoami: {
    method: 'GET',
    path: '/v1/whoami',
    summary: 'The caller the credential authenticates as: principal, tenant, owner and caller scopes',
    params: NoPathParams,
    response: WhoamiResponse,
    errors: ['UNAUTHENTICATED', 'RATE_LIMITED'],
  },
  ...SANDBOX_RESOURCE_ROUTES,
  ...ADMIN_ROUTES,
  adminRevoke: {
    method: 'POST',
    path: '/admin/revocations',
    summary: "Revoke a token (jti), a session's tokens, or every token of a sandbox (its key is rotated)",
    params: NoPathParams,
    body: RevocationRequest,
    response: RevocationResponse,
    errors: [
      'BAD_REQUEST',
      ...AUTH_ERRORS,
      'NOT_FOUND',
      'SESSION_NOT_FOUND',
      'SANDBOX_NOT_FOUND',
      'RATE_LIMITED',
      'PROVIDER_UNAVAILABLE',
    ],
  },
} as const satisfies Record<string, RouteSpec>;
export type RouteName = keyof typeof ROUTES;
