import { z } from 'zod';
import type { ErrorCode } from './errors.js';
import {
  GetBindingResponse,
  HeartbeatResponse,
  RefreshTokenResponse,
  SessionResponse,
} from './session-responses.js';
import { EmptyBody, NegotiateSessionRequest, SessionPathParams } from './sessions.js';
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
 * HTTP status is `ERROR_TABLE[code].status`; `errors` lists the codes the seeds name
 * for the route (plus BAD_REQUEST wherever there is a body or path parameter).
 */
export interface RouteSpec {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** OpenAPI-style path template. */
  readonly path: string;
  readonly summary: string;
  readonly params: z.ZodType;
  readonly body?: z.ZodType;
  readonly response?: z.ZodType;
  readonly errors: readonly ErrorCode[];
}

/** A route without path parameters. */
export const NoPathParams = z.strictObject({});

const AUTH_ERRORS = ['UNAUTHENTICATED', 'FORBIDDEN'] as const satisfies readonly ErrorCode[];

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
      'IDEMPOTENCY_KEY_REUSED',
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
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'SESSION_NOT_FOUND'],
  },
  refreshSession: {
    method: 'POST',
    path: '/v1/sandbox/sessions/{session_id}/refresh',
    summary: 'MVP token refresh; MVP clients read {token, expires_at} of the response',
    params: SessionPathParams,
    body: EmptyBody,
    response: RefreshTokenResponse,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'SESSION_NOT_FOUND', 'SESSION_EXPIRED'],
  },
  refreshToken: {
    method: 'POST',
    path: '/v1/sandbox/sessions/{session_id}/refresh-token',
    summary: 'Full token refresh: new credentials, lease unchanged',
    params: SessionPathParams,
    body: EmptyBody,
    response: RefreshTokenResponse,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'BINDING_NOT_FOUND', 'SESSION_EXPIRED'],
  },
  heartbeatSession: {
    method: 'POST',
    path: '/v1/sandbox/sessions/{session_id}/heartbeat',
    summary: 'Extend the lease; the token is unchanged',
    params: SessionPathParams,
    body: EmptyBody,
    response: HeartbeatResponse,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'BINDING_NOT_FOUND', 'SESSION_EXPIRED'],
  },
  releaseSession: {
    method: 'DELETE',
    path: '/v1/sandbox/sessions/{session_id}',
    summary: 'Release the binding',
    params: SessionPathParams,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'SESSION_NOT_FOUND'],
  },
  threadSandbox: {
    method: 'POST',
    path: '/threads/{thread_id}/sandbox',
    summary: "Negotiate access to the thread's sandbox (hybrid seed §2)",
    params: ThreadPathParams,
    body: ThreadSandboxRequest,
    response: ThreadSandboxResponse,
    errors: [
      'BAD_REQUEST',
      ...AUTH_ERRORS,
      'CAPABILITY_DENIED',
      'BINDING_CONFLICT',
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
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'BINDING_NOT_FOUND', 'SESSION_EXPIRED'],
  },
  threadHeartbeat: {
    method: 'POST',
    path: '/threads/{thread_id}/sandbox/heartbeat',
    summary: "Extend the sandbox's lease",
    params: ThreadPathParams,
    body: ThreadHeartbeatRequest,
    response: ThreadHeartbeatResponse,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'BINDING_NOT_FOUND', 'BINDING_CONFLICT'],
  },
  threadRelease: {
    method: 'DELETE',
    path: '/threads/{thread_id}/sandbox',
    summary: "Release (destroy) the thread's sandbox",
    params: ThreadPathParams,
    errors: ['BAD_REQUEST', ...AUTH_ERRORS, 'BINDING_NOT_FOUND'],
  },
} as const satisfies Record<string, RouteSpec>;
export type RouteName = keyof typeof ROUTES;
