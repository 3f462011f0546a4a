import { z } from 'zod';
import { SandboxState } from './lifecycle.js';
import { BearerToken, HttpUrl, Id, Timestamp, WorkspacePath, WsUrl } from './primitives.js';
import { CapabilityList, GrantedCapabilityList } from './scopes.js';

/**
 * Thread routes (docs/protocol.md#thread-routes):
 *
 *   POST   /threads/{thread_id}/sandbox            ThreadSandboxRequest   → ThreadSandboxResponse
 *   POST   /threads/{thread_id}/sandbox/refresh    ThreadRefreshRequest   → ThreadRefreshResponse
 *   POST   /threads/{thread_id}/sandbox/heartbeat  ThreadHeartbeatRequest → ThreadHeartbeatResponse
 *   DELETE /threads/{thread_id}/sandbox            (no body)              → 204
 *
 * Requests are strict (unknown keys rejected); responses strip unknown keys.
 * `scopes` accept the aliases (docs/protocol.md#aliases) and come out canonical and de-duplicated.
 */

/**
 * Upper bound of a requested token TTL; the broker's policy clamps further down
 * (docs/protocol.md#lifetimes-and-refresh).
 */
export const MAX_REQUESTED_TTL_SECONDS = 86_400;

export const ThreadPathParams = z.strictObject({ thread_id: Id });
export type ThreadPathParams = z.infer<typeof ThreadPathParams>;

export const ThreadSandboxRequest = z.strictObject({
  sandbox_id: Id.optional().describe('A sandbox to reconnect to; the server confirms or replaces it'),
  scopes: CapabilityList,
  ttl: z
    .number()
    .int({ message: 'must be a whole number of seconds' })
    .positive({ message: 'must be a positive number of seconds' })
    .max(MAX_REQUESTED_TTL_SECONDS, { message: `must be at most ${MAX_REQUESTED_TTL_SECONDS} seconds` })
    .optional()
    .describe('Requested token lifetime in seconds; the server may grant less'),
});
export type ThreadSandboxRequest = z.infer<typeof ThreadSandboxRequest>;
export type ThreadSandboxRequestInput = z.input<typeof ThreadSandboxRequest>;

export const ThreadEndpoints = z.object({ http: HttpUrl, ws: WsUrl });
export type ThreadEndpoints = z.infer<typeof ThreadEndpoints>;

/** `refresh_before` must not be after `expires_at`. */
function refreshWindowOk(v: { expires_at: string; refresh_before: string }): boolean {
  return Date.parse(v.refresh_before) <= Date.parse(v.expires_at);
}
const refreshWindowIssue = {
  path: ['refresh_before'],
  message: 'must not be later than expires_at',
};

export const ThreadSandboxResponse = z
  .object({
    sandbox_id: Id,
    endpoints: ThreadEndpoints,
    workspace_path: WorkspacePath,
    token: BearerToken,
    expires_at: Timestamp,
    scopes: GrantedCapabilityList.describe('Granted scopes; may be fewer than requested'),
    refresh_before: Timestamp,
  })
  .refine(refreshWindowOk, refreshWindowIssue);
export type ThreadSandboxResponse = z.infer<typeof ThreadSandboxResponse>;

export const ThreadRefreshRequest = z.strictObject({
  sandbox_id: Id,
  current_token: BearerToken.describe('Proves possession of the token being replaced'),
});
export type ThreadRefreshRequest = z.infer<typeof ThreadRefreshRequest>;

export const ThreadRefreshResponse = z
  .object({ token: BearerToken, expires_at: Timestamp, refresh_before: Timestamp })
  .refine(refreshWindowOk, refreshWindowIssue);
export type ThreadRefreshResponse = z.infer<typeof ThreadRefreshResponse>;

/**
 * Heartbeat extends the sandbox lease (docs/lifecycle.md#leases-and-heartbeats); either the
 * human or the agent may send it.
 * `sandbox_id`, when given, guards against extending a sandbox that has since been replaced
 * (the broker answers 409 BINDING_CONFLICT).
 */
export const ThreadHeartbeatRequest = z.strictObject({ sandbox_id: Id.optional() });
export type ThreadHeartbeatRequest = z.infer<typeof ThreadHeartbeatRequest>;

export const ThreadHeartbeatResponse = z.object({
  sandbox_id: Id,
  lease_expires_at: Timestamp,
  state: SandboxState,
  /** Current agent endpoints: a heartbeat resumes a suspended sandbox, whose agent may move. */
  endpoints: ThreadEndpoints.optional(),
});
export type ThreadHeartbeatResponse = z.infer<typeof ThreadHeartbeatResponse>;
