import { findExecutable } from '../../domain/exec/command.js';

/** The exec feature's limits; every one has a default and is meant to be set from the agent's config. */
export interface ExecOptions {
  /** Running user processes at most (exec, background and WebSocket together); beyond: 429. */
  readonly maxConcurrentProcesses?: number;
  /** Bytes of stdout / stderr a `POST /v1/exec` answer carries (the first ones). */
  readonly maxStdoutBytes?: number;
  readonly maxStderrBytes?: number;
  /** When a request gives no `timeout_ms`. */
  readonly defaultTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL when a timeout strikes. */
  readonly killGraceMs?: number;
  /** Ring buffer of each output stream of a background process. */
  readonly outputBufferBytes?: number;
  /** How long an exited background process stays listed. */
  readonly processRetentionMs?: number;
  /** Exited background processes kept at most. */
  readonly maxRetainedProcesses?: number;
  /** Largest JSON body (an exec's stdin travels in it). */
  readonly maxRequestBytes?: number;
  /** Stdin bytes queued for a process that does not read; beyond: 429. */
  readonly maxPendingStdinBytes?: number;
  /** Bytes queued for a slow `follow=true` reader before it is cut off. */
  readonly followBufferBytes?: number;
  /** After a program exits, how long pipes held by an escaped descendant may stay open. */
  readonly drainMs?: number;
  /** Serve the legacy `WS /execute?token=` (docs/protocol.md#legacy-endpoints). */
  readonly legacyEndpoints?: boolean;
  /** Program that runs `/execute`'s `code` with `-c`: default python3 when installed, else /bin/sh. */
  readonly legacyInterpreter?: string;
  /** Entries of the command log (GET /v1/commands/log) kept at most; the oldest goes first. */
  readonly commandLogSize?: number;
}

export type ResolvedExecOptions = Required<ExecOptions>;

const KIB = 1024;
const MIB = 1024 * KIB;

export function resolveExecOptions(options: ExecOptions = {}): ResolvedExecOptions {
  return {
    maxConcurrentProcesses: options.maxConcurrentProcesses ?? 32,
    maxStdoutBytes: options.maxStdoutBytes ?? 256 * KIB,
    maxStderrBytes: options.maxStderrBytes ?? 32 * KIB,
    defaultTimeoutMs: options.defaultTimeoutMs ?? 300_000,
    killGraceMs: options.killGraceMs ?? 2000,
    outputBufferBytes: options.outputBufferBytes ?? MIB,
    processRetentionMs: options.processRetentionMs ?? 600_000,
    maxRetainedProcesses: options.maxRetainedProcesses ?? 100,
    maxRequestBytes: options.maxRequestBytes ?? 8 * MIB,
    maxPendingStdinBytes: options.maxPendingStdinBytes ?? MIB,
    followBufferBytes: options.followBufferBytes ?? 4 * MIB,
    drainMs: options.drainMs ?? 2000,
    legacyEndpoints: options.legacyEndpoints ?? false,
    legacyInterpreter: options.legacyInterpreter ?? findExecutable(['python3']) ?? '/bin/sh',
    commandLogSize: options.commandLogSize ?? 1000,
  };
}
