// The 410 of a session whose sandbox ended says how it ended and, when the audit log
// recorded it, by whom and why (`sbx shell` tells its user "the sandbox was terminated
// by …" rather than showing a hang-up): `details` carries `sandbox_id`, `sandbox_state`
// (`terminated` or `failed`) and, if known, `ended_by` and `reason`; a failed one also its
// `failure_reason` (a crash loop: how often its agent crashed, and that its files are kept).
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { AuditEventRecord, AuditRepository, SandboxRecord } from '../../store/index.js';
import { sessionExpired } from './session-errors.js';

export interface SandboxEnding {
  /** The caller that ended it (`usr_1`), or `the broker` for its own lifecycle (a lease, a TTL). */
  readonly by?: string;
  /** `last_binding_released`, `admin_terminate`, `lease_expired` … */
  readonly reason?: string;
}

function endingOf(event: AuditEventRecord | null): SandboxEnding {
  if (event === null) return {};
  const detail = event.detail;
  const recorded =
    typeof detail === 'object' && detail !== null && !Array.isArray(detail) ? detail['reason'] : undefined;
  const by = event.callerType === 'system' ? 'the broker' : (event.callerId ?? undefined);
  return {
    ...(by === undefined ? {} : { by }),
    ...(typeof recorded === 'string' ? { reason: recorded } : {}),
  };
}

/**
 * SESSION_EXPIRED for a binding on a sandbox that is no longer live, naming the ending when
 * it is known; reading the audit log never fails the answer (the ending is then unknown).
 */
export async function sandboxEnded(
  audit: Pick<AuditRepository, 'findEnding'>,
  logger: Logger,
  bindingId: string,
  sandbox: SandboxRecord | null,
): Promise<SbxError> {
  if (sandbox === null) return sessionExpired(bindingId);
  const event = await audit.findEnding(sandbox.id).catch((err: unknown) => {
    logger.warn({ err, sandbox_id: sandbox.id }, 'could not read how a sandbox ended');
    return null;
  });
  const ending = endingOf(event);
  const state = sandbox.state === 'failed' ? 'failed' : 'terminated';
  const by = ending.by === undefined ? '' : ` by ${ending.by}`;
  const why = ending.reason === undefined ? '' : ` (${ending.reason})`;
  const failure = state === 'failed' ? (sandbox.failureReason ?? undefined) : undefined;
  return new SbxError(
    'SESSION_EXPIRED',
    `session ${bindingId} has ended: its sandbox ${sandbox.id} was ${state}${by}${why}` +
      (failure === undefined ? '' : `: ${failure}`),
    {
      details: {
        sandbox_id: sandbox.id,
        sandbox_state: state,
        ...(ending.by === undefined ? {} : { ended_by: ending.by }),
        ...(ending.reason === undefined ? {} : { reason: ending.reason }),
        ...(failure === undefined ? {} : { failure_reason: failure }),
      },
    },
  );
}
