import { constants } from 'node:os';

/** How a process ended: an exit code, or the signal that killed it (then `exitCode` is null). */
export interface ExitStatus {
  readonly exitCode: number | null;
  readonly signal: string | null;
}

/** Shell convention for a program that could not be found / could not be executed. */
export const EXIT_NOT_FOUND = 127;
export const EXIT_NOT_EXECUTABLE = 126;

const SIGNAL_NUMBERS = new Map<string, number>(Object.entries(constants.signals));

/** The shell's single number for a status: the exit code, or 128 + the signal's number. */
export function shellExitCode(status: ExitStatus): number {
  if (status.exitCode !== null) return status.exitCode;
  return 128 + (SIGNAL_NUMBERS.get(status.signal ?? '') ?? 0);
}
