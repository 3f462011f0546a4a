import { toTimestamp, type SandboxResource } from '@sbx/protocol';
import type { Sandbox } from '../../store/generated/client.js';
import { toWireEnvironment } from '../admin/policy-presenter.js';

/** Labels are strings; anything else stored there (never written by the API) is left out. */
function labels(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const out: Record<string, string> = {};
  for (const [key, entry] of Object.entries(value)) if (typeof entry === 'string') out[key] = entry;
  return out;
}

export function toSandboxResource(row: Sandbox): SandboxResource {
  return {
    id: row.id,
    name: row.name,
    tenant_id: row.tenantId,
    owner_id: row.ownerId,
    scope: { type: row.scopeType, id: row.scopeId },
    state: row.state,
    template: row.template,
    environment: toWireEnvironment(row.environment),
    metadata: labels(row.metadata),
    provider: row.provider,
    workspace_path: row.workspacePath,
    created_at: toTimestamp(row.createdAt),
    lease_expires_at: toTimestamp(row.leaseExpiresAt),
    hard_expires_at: toTimestamp(row.hardExpiresAt),
    failure_reason: row.failureReason,
  };
}
