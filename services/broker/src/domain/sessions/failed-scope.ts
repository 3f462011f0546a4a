// A scope whose sandbox broke while in use (its agent crashed, and its provider gave up
// restarting it) is not silently handed a new, empty sandbox: the files its holders made
// are in the failed one, kept for the failed retention. Until its owner deletes the
// failed sandbox (`DELETE /v1/sandboxes/{id}`) or the retention ends, a request that
// would otherwise create the scope's sandbox is refused with 409 naming it, its state
// and its failure (docs/lifecycle.md, "Agent crashes"). A sandbox that failed before it
// ever served (provisioning), or whose workspace is gone anyway, leaves the scope free.
import { SbxError } from '@sbx/protocol';
import type { OwnedScope } from '../../store/index.js';
import type { SessionCore } from './session-core.js';

/** The lifecycle reasons of failures that keep a workspace worth coming back for. */
const KEPT_WORKSPACE_FAILURES: readonly string[] = ['crash_loop', 'agent_exit'];

export async function assertNotBrokenInUse(
  core: SessionCore,
  scope: OwnedScope,
  named: string,
): Promise<void> {
  const latest = await core.repositories.sandboxes.findLatestByScope(scope);
  if (latest?.state !== 'failed') return;
  const ending = await core.repositories.audit.findEnding(latest.id);
  const detail = ending?.detail;
  const reason =
    typeof detail === 'object' && detail !== null && !Array.isArray(detail) ? detail['reason'] : undefined;
  if (typeof reason !== 'string' || !KEPT_WORKSPACE_FAILURES.includes(reason)) return;
  const failure = latest.failureReason ?? 'its agent ended';
  throw new SbxError(
    'CONFLICT',
    `${named}'s sandbox ${latest.id} is failed (${failure}). A new sandbox would start without its ` +
      `files, so none is made: delete the failed one (DELETE /v1/sandboxes/${latest.id}) to start over.`,
    {
      details: {
        sandbox_id: latest.id,
        state: 'failed',
        reason,
        failure_reason: failure,
        ...(latest.failedAt === null ? {} : { failed_at: latest.failedAt.toISOString() }),
      },
    },
  );
}
