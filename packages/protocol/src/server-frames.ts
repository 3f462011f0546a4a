import { z } from 'zod';
import { ErrorBody } from './errors.js';
import { Id, Timestamp } from './primitives.js';
import { dataEncodingIssue, dataEncodingOk, dataFields, PingId, type WsEndpoint } from './frames.js';

/** Server → client frames of the dataplane WebSockets (see frames.ts for the encoding rules). */

// ---- server → client -------------------------------------------------------

export const AuthOkFrame = z.object({
  type: z.literal('auth_ok'),
  session_id: Id.optional(),
  expires_at: Timestamp.optional(),
});
export type AuthOkFrame = z.infer<typeof AuthOkFrame>;

/** The shell (with its id, for re-attaching) or the process is running; watch sends neither id. */
export const ReadyFrame = z
  .object({
    type: z.literal('ready'),
    shell_session_id: Id.optional(),
    process_id: Id.optional(),
    /**
     * Shells: the absolute offset, in the shell's whole output, of the first byte this
     * connection will receive (the oldest byte of the replayed scrollback). A client that
     * reattaches and has already seen `n` bytes skips `n - output_offset` of them: exactly once.
     */
    output_offset: z.number().int().nonnegative().optional(),
  })
  .refine((v) => v.shell_session_id === undefined || v.process_id === undefined, {
    message: 'carries shell_session_id or process_id, not both',
  });
export type ReadyFrame = z.infer<typeof ReadyFrame>;

export const StdoutFrame = z
  .object({ type: z.literal('stdout'), ...dataFields })
  .refine(dataEncodingOk, dataEncodingIssue);
export type StdoutFrame = z.infer<typeof StdoutFrame>;

export const StderrFrame = z
  .object({ type: z.literal('stderr'), ...dataFields })
  .refine(dataEncodingOk, dataEncodingIssue);
export type StderrFrame = z.infer<typeof StderrFrame>;

/**
 * The process ended. Killed by a signal: `signal` names it (any `SIG…`, e.g. `SIGSEGV`,
 * not only the ones a client may send) and `code` is 128 + the signal number.
 */
export const ExitFrame = z.object({
  type: z.literal('exit'),
  code: z.number().int(),
  signal: z
    .string()
    .regex(/^SIG[A-Z0-9]+$/)
    .optional(),
});
export type ExitFrame = z.infer<typeof ExitFrame>;

export const PongFrame = z.object({ type: z.literal('pong'), id: PingId.optional() });
export type PongFrame = z.infer<typeof PongFrame>;

/** The same ErrorBody as HTTP error envelopes. */
export const ErrorFrame = z.object({ type: z.literal('error'), error: ErrorBody });
export type ErrorFrame = z.infer<typeof ErrorFrame>;

export const WATCH_EVENTS = ['create', 'write', 'remove', 'rename'] as const;
export const WatchEventName = z.enum(WATCH_EVENTS);
export const WATCH_ENTRY_KINDS = ['file', 'dir', 'other'] as const;
export const WatchEntryKind = z.enum(WATCH_ENTRY_KINDS);

/**
 * A file-watch event. The entry's kind is `kind` (not `type`, which is the frame's
 * discriminator). `old_path` is present exactly on `rename`.
 */
export const WatchEventFrame = z
  .object({
    type: z.literal('event'),
    event: WatchEventName,
    path: z.string().min(1),
    kind: WatchEntryKind,
    old_path: z.string().min(1).optional(),
  })
  .refine((v) => (v.event === 'rename') === (v.old_path !== undefined), {
    path: ['old_path'],
    message: 'is required on rename and only on rename',
  });
export type WatchEventFrame = z.infer<typeof WatchEventFrame>;

const processServerFrames = [
  AuthOkFrame,
  ReadyFrame,
  StdoutFrame,
  StderrFrame,
  ExitFrame,
  PongFrame,
  ErrorFrame,
] as const;
export const ShellServerFrame = z.discriminatedUnion('type', [...processServerFrames]);
export type ShellServerFrame = z.infer<typeof ShellServerFrame>;
export const ExecServerFrame = z.discriminatedUnion('type', [...processServerFrames]);
export type ExecServerFrame = z.infer<typeof ExecServerFrame>;
export const WatchServerFrame = z.discriminatedUnion('type', [
  AuthOkFrame,
  ReadyFrame,
  WatchEventFrame,
  PongFrame,
  ErrorFrame,
]);
export type WatchServerFrame = z.infer<typeof WatchServerFrame>;

/** Any server frame, whatever the endpoint. */
export const ServerFrame = z.discriminatedUnion('type', [...processServerFrames, WatchEventFrame]);
export type ServerFrame = z.infer<typeof ServerFrame>;

export const SERVER_FRAME_SCHEMAS = {
  shell: ShellServerFrame,
  exec: ExecServerFrame,
  watch: WatchServerFrame,
} as const;
export type ServerFrameFor<E extends WsEndpoint> = z.infer<(typeof SERVER_FRAME_SCHEMAS)[E]>;
export const SERVER_FRAME_TYPES = [
  'auth_ok',
  'ready',
  'stdout',
  'stderr',
  'exit',
  'pong',
  'error',
  'event',
] as const;
export type ServerFrameType = (typeof SERVER_FRAME_TYPES)[number];
