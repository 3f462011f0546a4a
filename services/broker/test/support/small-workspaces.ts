// For test brokers on the local provider whose sandboxes need no big workspace. A root
// broker gives each sandbox a workspace volume of the tenant's `max_disk_mb` (10 GiB by
// default) and admits a create only while every promise fits the host's free disk
// (disk-budget.ts): on this machine's ~79 GB free, six sandboxes per data directory. A test
// file with more threads than that, or beside another suite, was refused 507 "not enough
// disk". Tests that write big files or test the disk set their own size (reliability/disk).
import type { PolicyRepository } from '../../src/store/policy-repository.js';

/** Each workspace's size: above what any of these tests writes in one sandbox (~50 MiB). */
export const TEST_WORKSPACE_MB = 256;

/** Gives every sandbox of the tenant a workspace of `mb`; its other limits keep their values. */
export async function useSmallWorkspaces(
  repositories: { readonly policies: Pick<PolicyRepository, 'upsertTenantPolicy'> },
  tenantId: string,
  mb = TEST_WORKSPACE_MB,
): Promise<void> {
  await repositories.policies.upsertTenantPolicy(tenantId, { maxDiskMb: mb });
}
