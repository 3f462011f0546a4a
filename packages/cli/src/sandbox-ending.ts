import { setTimeout as sleep } from 'node:timers/promises';
import { SbxError } from '@sbx/protocol';
import type { BrokerClient, ShellExit } from '@sbx/client';
import { isGone } from './staleness.js';
import type { CliStore } from './store.js';

/** How long the broker may take to record an end its agent already showed (destroy first, then the state). */
const CHECKS = 12;
const CHECK_INTERVAL_MS = 250;

/**
 * Whether a shell's end looks like its sandbox going away rather than the user leaving it:
 * a signal (a sandbox's shells are hung up when its agent stops: 129) or a lost connection.
 */
export function endedAbruptly(exit: ShellExit | undefined): boolean {
  return exit === undefined || exit.signal !== undefined || exit.code > 128;
}

/**
 * Asks the broker whether the thread's cached sandbox ended, for a while (the agent may stop
 * a moment before the broker records it). Ended (its 410 names the sandbox's state): the
 * error to report, naming who ended it when the broker says (exit 4, as every command on a
 * thread whose sandbox is gone), and the thread's cached bindings are dropped. Still there,
 * only this binding released, or no answer: undefined.
 */
export async function endedSandbox(
  broker: BrokerClient,
  store: CliStore,
  thread: string,
  checks = CHECKS,
): Promise<SbxError | undefined> {
  const cached = store.readThreads()[thread];
  const sessionId = cached?.bindings.human?.session_id;
  if (sessionId === undefined) return undefined;
  for (let check = 0; check < checks; check++) {
    if (check > 0) await sleep(CHECK_INTERVAL_MS);
    try {
      await broker.inspect(sessionId, { timeoutMs: 2_000 });
    } catch (err) {
      // The broker cannot say, or only this binding ended: the caller reports what it saw.
      if (!isGone(err) || !(err instanceof SbxError) || typeof err.details?.['sandbox_state'] !== 'string')
        return undefined;
      store.updateThread(thread, (entry) => (entry?.sandbox_id === cached?.sandbox_id ? undefined : entry));
      return terminated(thread, err);
    }
  }
  return undefined;
}

function terminated(thread: string, err: SbxError): SbxError {
  const text = (name: string): string | undefined => {
    const value = err.details?.[name];
    return typeof value === 'string' ? value : undefined;
  };
  const state = text('sandbox_state') ?? 'terminated';
  const by = text('ended_by');
  const reason = text('reason');
  const who = `${by === undefined ? '' : ` by ${by}`}${reason === undefined ? '' : ` (${reason})`}`;
  return new SbxError(
    'SANDBOX_NOT_FOUND',
    `the sandbox of thread ${thread} was ${state}${who}: sbx ensure ${thread} starts a new one`,
  );
}
