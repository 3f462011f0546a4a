// A data-plane call through the relay is use, like a heartbeat (docs/relay.md, "Suspended
// sandboxes"): a sandbox the lifecycle suspended is resumed by the sessions' own resume
// (`SessionService.resume`, under the sandbox lock), and the call waits for it up to the
// sessions' short bound (`provisioningWaitMs`), then answers 423 SANDBOX_STARTING with
// Retry-After while the resume goes on. A sandbox its owner stopped stays stopped (409)
// until started: a stray call must not undo an explicit stop.
import { setTimeout as sleep } from 'node:timers/promises';
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Sandbox } from '../../store/generated/client.js';
import type { AuditContext } from '../audit/audit-trail.js';
import { sandboxStarting } from '../sessions/session-errors.js';
import type { SessionService } from '../sessions/session-service.js';

export interface RelayResumeDeps {
  readonly sessions: Pick<SessionService, 'resume' | 'settings'>;
  /** Whether the sandbox's latest suspension was its owner's stop (owner-stops.ts). */
  readonly stoppedByOwner: (sandboxId: string) => Promise<boolean>;
  readonly logger: Logger;
}

/** The agent's addresses of a running sandbox. */
export interface RunningDataplane {
  readonly sandbox: Sandbox;
  readonly httpBaseUrl: string;
  readonly wsBaseUrl: string;
}

const notRunning = (sandbox: Pick<Sandbox, 'id' | 'state' | 'failureReason'>, hint: string) =>
  new SbxError('CONFLICT', `sandbox ${sandbox.id} is ${sandbox.state}; ${hint}`, {
    details: {
      sandbox_id: sandbox.id,
      state: sandbox.state,
      ...(sandbox.failureReason === null ? {} : { failure_reason: sandbox.failureReason }),
    },
  });

const startFirst = (sandbox: Sandbox) =>
  notRunning(sandbox, `start it first (POST /v1/sandboxes/${sandbox.id}/start)`);

/** Why a sandbox in each state cannot take a relayed call as it is; a Record, so a new state must say. */
const REFUSALS: Record<Sandbox['state'], (sandbox: Sandbox) => SbxError | undefined> = {
  active: () => undefined,
  idle: () => undefined,
  provisioning: () => sandboxStarting(),
  suspended: startFirst,
  failed: (sandbox) => notRunning(sandbox, 'it cannot be resumed; create a new one'),
  terminated: (sandbox) => notRunning(sandbox, 'it cannot be resumed; create a new one'),
};

/** The agent's addresses of a running sandbox; 423 while it starts, 409 otherwise. */
export function runningDataplane(sandbox: Sandbox): RunningDataplane {
  const { httpBaseUrl, wsBaseUrl } = sandbox;
  const refused = REFUSALS[sandbox.state](sandbox);
  if (refused !== undefined) throw refused;
  if (httpBaseUrl === null || wsBaseUrl === null) throw startFirst(sandbox);
  return { sandbox, httpBaseUrl, wsBaseUrl };
}

export class RelayResume {
  /** Resumes under way in this process: concurrent calls join one instead of queueing at the lock. */
  readonly #inFlight = new Map<string, Promise<Sandbox | null>>();

  constructor(private readonly deps: RelayResumeDeps) {}

  /** The running sandbox behind a relayed call, resumed first when the lifecycle suspended it. */
  async running(context: AuditContext, sandbox: Sandbox): Promise<RunningDataplane> {
    if (sandbox.state !== 'suspended' || (await this.deps.stoppedByOwner(sandbox.id)))
      return runningDataplane(sandbox);
    return runningDataplane(await this.#resumed(context, sandbox));
  }

  async #resumed(context: AuditContext, sandbox: Sandbox): Promise<Sandbox> {
    const resume = this.#inFlight.get(sandbox.id) ?? this.#start(context, sandbox);
    const waited = await settledWithin(resume, this.deps.sessions.settings.provisioningWaitMs);
    if (waited === 'pending') throw sandboxStarting();
    if (waited === null) throw notRunning({ ...sandbox, state: 'terminated' }, 'create a new one');
    return waited;
  }

  #start(context: AuditContext, sandbox: Sandbox): Promise<Sandbox | null> {
    const resume = this.deps.sessions.resume(context, sandbox).finally(() => {
      this.#inFlight.delete(sandbox.id);
    });
    this.#inFlight.set(sandbox.id, resume);
    // The caller may be answered 423 before it ends: its failure is logged here (and the
    // sandbox's state and audit say what happened), never an unhandled rejection.
    resume.catch((err: unknown) => {
      this.deps.logger.warn({ err, sandbox_id: sandbox.id }, 'relay: resuming a suspended sandbox failed');
    });
    return resume;
  }
}

/** The promise's value when it settles within `ms`; 'pending' otherwise. Rejections pass through. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  const timer = new AbortController();
  try {
    return await Promise.race([promise, sleep(ms, 'pending' as const, { signal: timer.signal })]);
  } finally {
    timer.abort();
  }
}
