// For test files whose one owner makes more sandboxes than the default per-owner share
// (half of `max_sandboxes`: docs/security.md, "Per-owner sandbox quota") when that share
// is not what they test.
import type { PolicyRepository } from '../../src/store/policy-repository.js';

/**
 * Lets every owner of the tenant use all of its `max_sandboxes`, as an admin does by setting
 * `max_sandboxes_per_owner` to it; the tenant's other limits keep their values.
 */
export async function liftOwnerShare(
  repositories: { readonly policies: Pick<PolicyRepository, 'getTenantPolicy' | 'upsertTenantPolicy'> },
  tenantId: string,
): Promise<void> {
  const { maxSandboxes } = await repositories.policies.getTenantPolicy(tenantId);
  await repositories.policies.upsertTenantPolicy(tenantId, { maxSandboxesPerOwner: maxSandboxes });
}
