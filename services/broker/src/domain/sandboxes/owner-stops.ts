// Who suspended a sandbox: its owner (`POST /v1/sandboxes/{id}/stop`) or the lifecycle (the
// lease reaper, a start-up reconciliation). Both leave it `suspended`; the relay resumes only
// the second kind (docs/relay.md, "Suspended sandboxes"). The answer is the audit row written
// in the same transaction as the move into `suspended`, so it cannot disagree with the state.
import type { PrismaClient } from '../../store/generated/client.js';
import { guard } from '../../store/db-errors.js';
import { STATE_AUDIT_ACTION } from '../lifecycle/lifecycle-audit.js';

/** The reason an owner's stop records (sandbox-resources.ts). */
export const OWNER_STOP_REASON = 'user_stop';

/** Whether the sandbox's latest move into `suspended` was its owner's stop. */
export async function stoppedByOwner(
  prisma: Pick<PrismaClient, 'auditEvent'>,
  sandboxId: string,
): Promise<boolean> {
  const entry = await guard('find how a sandbox was suspended', () =>
    prisma.auditEvent.findFirst({
      where: {
        sandboxId,
        action: STATE_AUDIT_ACTION,
        outcome: 'ok',
        detail: { path: ['to'], equals: 'suspended' },
      },
      // Insertion order, not `at`: instances' clocks may disagree, the sequence does not.
      orderBy: { id: 'desc' },
      select: { detail: true },
    }),
  );
  const detail = entry?.detail;
  if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) return false;
  return detail['reason'] === OWNER_STOP_REASON;
}
