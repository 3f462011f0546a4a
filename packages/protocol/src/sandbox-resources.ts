import { z } from 'zod';
import { AdminCursor, AdminLimit, adminPage, NetworkEnvironment } from './admin.js';
import { SandboxState } from './lifecycle.js';
import { Id, Timestamp, WorkspacePath } from './primitives.js';
import { Scope, ScopeType } from './sessions.js';

/**
 * Sandboxes as resources (docs/sandboxes.md), sandboxd style: callers address a sandbox by
 * id, one caller scope per kind of operation, the broker carrying data-plane traffic.
 *
 *   GET    /v1/sandboxes                      read:sandbox   SandboxListQuery → SandboxPage
 *   POST   /v1/sandboxes                      write:sandbox  CreateSandboxRequest → 201 SandboxResource
 *   GET    /v1/sandboxes/{id}                 read:sandbox   → SandboxResource
 *   PATCH  /v1/sandboxes/{id}                 write:sandbox  UpdateSandboxRequest → SandboxResource
 *   POST   /v1/sandboxes/{id}/start|stop      write:sandbox  → SandboxResource
 *   DELETE /v1/sandboxes/{id}                 write:sandbox  → 204
 *   GET    /v1/sandboxes/{id}/logs            read:sandbox   the agent's command log
 *   PUT    /v1/sandboxes/{id}/files?path=     write:sandbox  body = the file (relayed)
 *   GET    /v1/sandboxes/{id}/files?path=     read:sandbox   (relayed)
 *   POST   /v1/sandboxes/{id}/commands        exec:sandbox   SandboxCommandRequest (relayed)
 *   WS     /v1/sandboxes/{id}/sessions/{sid}  attach:sandbox a PTY (relayed)
 */

export const TEMPLATES = ['default'] as const;

const Name = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, {
  message: 'must be 1-63 letters, digits, _ . - (not starting with one of _ . -)',
});

const MetadataKey = z.string().regex(/^[A-Za-z0-9_./-]{1,63}$/, { message: 'is not a metadata key' });
/** Labels, as Kubernetes has them: short strings, at most 64 of them. */
export const SandboxMetadata = z
  .record(MetadataKey, z.string().max(256))
  .refine((m) => Object.keys(m).length <= 64, { message: 'at most 64 entries' });
export type SandboxMetadata = z.infer<typeof SandboxMetadata>;

export const SandboxPathParams = z.strictObject({ id: Id });

export const CreateSandboxRequest = z.strictObject({
  name: Name.optional(),
  template: z.string().min(1).max(100).default('default'),
  environment: NetworkEnvironment.optional().describe("Narrows the tenant's environment; never widens it"),
  metadata: SandboxMetadata.default({}),
  thread_id: Id.optional().describe("Bind the new sandbox to this thread: it becomes the thread's sandbox"),
});
export type CreateSandboxRequest = z.infer<typeof CreateSandboxRequest>;

export const UpdateSandboxRequest = z
  .strictObject({ name: Name.nullable().optional(), metadata: SandboxMetadata.optional() })
  .refine((body) => body.name !== undefined || body.metadata !== undefined, {
    message: 'name or metadata is required',
  });
export type UpdateSandboxRequest = z.infer<typeof UpdateSandboxRequest>;

export const SandboxListQuery = z.strictObject({
  state: SandboxState.optional(),
  scope_type: ScopeType.optional(),
  thread_id: Id.optional(),
  name: Name.optional(),
  tenant_id: Id.optional().describe('admin:sandbox only'),
  cursor: AdminCursor.optional(),
  limit: AdminLimit,
});
export type SandboxListQuery = z.infer<typeof SandboxListQuery>;

export const SandboxResource = z.object({
  id: Id,
  name: z.string().nullable(),
  tenant_id: Id,
  owner_id: Id,
  scope: Scope,
  state: SandboxState,
  template: z.string(),
  environment: NetworkEnvironment,
  metadata: z.record(z.string(), z.string()),
  provider: z.string(),
  workspace_path: WorkspacePath,
  created_at: Timestamp,
  lease_expires_at: Timestamp,
  hard_expires_at: Timestamp,
  failure_reason: z.string().nullable(),
});
export type SandboxResource = z.infer<typeof SandboxResource>;

export const SandboxPage = adminPage(SandboxResource);
export type SandboxPage = z.infer<typeof SandboxPage>;

export const SandboxFileQuery = z.strictObject({ path: z.string().min(1).max(4096) });

export const SandboxSessionParams = z.strictObject({
  id: Id,
  sid: z.string().regex(/^(new|[A-Za-z0-9_-]{1,128})$/, { message: 'is `new` or a shell id' }),
});
