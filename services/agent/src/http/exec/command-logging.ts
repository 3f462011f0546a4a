import { SbxError, type CommandLogEntry, type CommandLogPage, toTimestamp } from '@sbx/protocol';
import type { VerifiedCapability } from '@sbx/tokens';
import type {
  CommandHandle,
  CommandLog,
  CommandOutcome,
  CommandPage,
  CommandRecord,
  CommandStart,
} from '../../domain/commands/command-log.js';
import type { ExitStatus } from '../../domain/exec/exit-status.js';

/** What a route starts: its kind and the command (see `commandTextOf` / `codeLineOf`). */
export type CommandWhat = Pick<CommandStart, 'route' | 'command' | 'language'>;

/** Opens the log entry of a program: who from the verified capability, what from the route. */
export function beginCommand(
  log: CommandLog,
  capability: VerifiedCapability,
  what: CommandWhat,
): CommandHandle {
  const { sub, act, jti } = capability.claims;
  return log.begin({ ...what, sub, actSub: act?.sub, jti });
}

/** Awaits `start`; when it fails the entry keeps the refusal's code and the error goes on. */
export async function loggedStart<T>(handle: CommandHandle, start: Promise<T>): Promise<T> {
  try {
    return await start;
  } catch (err) {
    handle.fail(SbxError.from(err).code);
    throw err;
  }
}

export function outcomeOf(
  status: ExitStatus,
  timedOut: boolean,
  exitStatus?: CommandOutcome['exitStatus'],
): CommandOutcome {
  return { exitCode: status.exitCode, signal: status.signal, timedOut, exitStatus };
}

function entryOf(record: CommandRecord): CommandLogEntry {
  return {
    seq: record.seq,
    route: record.route,
    sub: record.sub,
    act_sub: record.actSub,
    jti: record.jti,
    command: record.command,
    language: record.language,
    started_at: toTimestamp(record.startedAt),
    ended_at: record.endedAt === null ? null : toTimestamp(record.endedAt),
    duration_ms: record.durationMs,
    exit_code: record.exitCode,
    signal: record.signal,
    timed_out: record.timedOut,
    exit_status: record.exitStatus,
    error: record.error,
  };
}

export function commandLogPageOf(page: CommandPage): CommandLogPage {
  return { items: page.items.map(entryOf), next_after: page.nextAfter };
}
