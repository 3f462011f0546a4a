import { z } from 'zod';
import { BearerToken, Id } from './primitives.js';

/**
 * WebSocket frames of the dataplane: JSON text messages, discriminated on `type`.
 *
 * Byte encoding of `data` (stdin, stdout, stderr): UTF-8 text unless `encoding:'base64'`,
 * in which case `data` is standard base64 (RFC 4648 §4, with padding) of the raw bytes.
 * `encoding` absent means `'utf8'`. Senders use base64 whenever the bytes are not valid
 * UTF-8 (binary output, or a chunk that splits a multi-byte character); receivers must
 * accept both on every frame.
 *
 * Client frames are strict (an unknown key is a violation); server frames strip unknown
 * keys so that clients keep working when the server adds fields.
 *
 * Endpoints: `shell` (interactive PTY), `exec` (one process), `watch` (file events).
 * `start` differs per endpoint, so each endpoint has its own client-frame union.
 */

export const WS_ENDPOINTS = ['shell', 'exec', 'watch'] as const;
export const WsEndpoint = z.enum(WS_ENDPOINTS);
export type WsEndpoint = z.infer<typeof WsEndpoint>;

export const FRAME_ENCODINGS = ['utf8', 'base64'] as const;
export const FrameEncoding = z.enum(FRAME_ENCODINGS);
export type FrameEncoding = z.infer<typeof FrameEncoding>;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export const dataFields = { data: z.string(), encoding: FrameEncoding.optional() };
export function dataEncodingOk(v: { data: string; encoding?: FrameEncoding | undefined }): boolean {
  return v.encoding !== 'base64' || BASE64.test(v.data);
}
export const dataEncodingIssue = {
  path: ['data'],
  message: 'is not valid base64 although encoding is "base64"',
};

/** Terminal columns or rows. */
export const TerminalDimension = z.number().int().min(1).max(1000);

/** Signals a client may send; a closed list so a typo is an error, not a silent no-op. */
export const SIGNALS = [
  'SIGINT',
  'SIGTERM',
  'SIGKILL',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGSTOP',
  'SIGCONT',
  'SIGWINCH',
] as const;
export const Signal = z.enum(SIGNALS);
export type Signal = z.infer<typeof Signal>;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const Env = z.record(
  z.string().regex(ENV_NAME, { message: 'is not a valid variable name' }),
  z.string(),
);
const Cwd = z.string().min(1).max(4096);
export const PingId = z.string().max(200);

// ---- client → server -------------------------------------------------------

export const AuthFrame = z.strictObject({ type: z.literal('auth'), token: BearerToken });
export type AuthFrame = z.infer<typeof AuthFrame>;

/** `start` on the shell endpoint: open a PTY, or re-attach to `shell_session_id`. */
export const ShellStartFrame = z.strictObject({
  type: z.literal('start'),
  cols: TerminalDimension,
  rows: TerminalDimension,
  cwd: Cwd.optional(),
  env: Env.optional(),
  shell_session_id: Id.optional(),
  /**
   * `json` (default): output arrives as `stdout` frames. `binary`: output arrives as binary
   * WebSocket messages carrying the raw terminal bytes (no JSON, no base64), for clients
   * that relay a terminal; every other server frame stays JSON text.
   */
  output: z.enum(['json', 'binary']).optional(),
});
export type ShellStartFrame = z.infer<typeof ShellStartFrame>;

/** Longest `timeout_ms` of an exec start (24 h). */
export const MAX_EXEC_TIMEOUT_MS = 86_400_000;

/**
 * `start` on the exec endpoint: exactly one of `argv` (run directly, no shell) or `cmd`
 * (run with `sh -c`). `stdin`, if given, is UTF-8 text written before stdin frames.
 */
export const ExecStartFrame = z
  .strictObject({
    type: z.literal('start'),
    argv: z.array(z.string()).min(1).max(4096).optional(),
    cmd: z.string().min(1).optional(),
    cwd: Cwd.optional(),
    env: Env.optional(),
    stdin: z.string().optional(),
    timeout_ms: z.number().int().positive().max(MAX_EXEC_TIMEOUT_MS).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.argv !== undefined && v.cmd !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['cmd'], message: 'give either argv or cmd, not both' });
    } else if (v.argv === undefined && v.cmd === undefined) {
      ctx.addIssue({ code: 'custom', path: ['argv'], message: 'one of argv or cmd is required' });
    } else if (v.argv !== undefined && v.argv[0] === '') {
      ctx.addIssue({ code: 'custom', path: ['argv', 0], message: 'program name must not be empty' });
    }
  });
export type ExecStartFrame = z.infer<typeof ExecStartFrame>;

/** `start` on the watch endpoint: watch `path` (a file or a directory). */
export const WatchStartFrame = z.strictObject({
  type: z.literal('start'),
  path: z.string().min(1).max(4096),
  recursive: z.boolean().optional(),
});
export type WatchStartFrame = z.infer<typeof WatchStartFrame>;

/** `eof: true` closes the process's stdin after `data` (e.g. for `wc` or `cat`); PTYs ignore it. */
export const StdinFrame = z
  .strictObject({ type: z.literal('stdin'), ...dataFields, eof: z.boolean().optional() })
  .refine(dataEncodingOk, dataEncodingIssue);
export type StdinFrame = z.infer<typeof StdinFrame>;

export const ResizeFrame = z.strictObject({
  type: z.literal('resize'),
  cols: TerminalDimension,
  rows: TerminalDimension,
});
export type ResizeFrame = z.infer<typeof ResizeFrame>;

export const SignalFrame = z.strictObject({ type: z.literal('signal'), signal: Signal });
export type SignalFrame = z.infer<typeof SignalFrame>;

export const PingFrame = z.strictObject({ type: z.literal('ping'), id: PingId.optional() });
export type PingFrame = z.infer<typeof PingFrame>;

/** Asks the server to end the session (the shell or process is terminated) and close with 1000. */
export const CloseFrame = z.strictObject({ type: z.literal('close') });
export type CloseFrame = z.infer<typeof CloseFrame>;

export const ShellClientFrame = z.discriminatedUnion('type', [
  AuthFrame,
  ShellStartFrame,
  StdinFrame,
  ResizeFrame,
  SignalFrame,
  PingFrame,
  CloseFrame,
]);
export type ShellClientFrame = z.infer<typeof ShellClientFrame>;

/** Exec has no terminal, so no `resize`. */
export const ExecClientFrame = z.discriminatedUnion('type', [
  AuthFrame,
  ExecStartFrame,
  StdinFrame,
  SignalFrame,
  PingFrame,
  CloseFrame,
]);
export type ExecClientFrame = z.infer<typeof ExecClientFrame>;

export const WatchClientFrame = z.discriminatedUnion('type', [
  AuthFrame,
  WatchStartFrame,
  PingFrame,
  CloseFrame,
]);
export type WatchClientFrame = z.infer<typeof WatchClientFrame>;

export const CLIENT_FRAME_SCHEMAS = {
  shell: ShellClientFrame,
  exec: ExecClientFrame,
  watch: WatchClientFrame,
} as const;
export type ClientFrameFor<E extends WsEndpoint> = z.infer<(typeof CLIENT_FRAME_SCHEMAS)[E]>;
export type ClientFrame = ShellClientFrame | ExecClientFrame | WatchClientFrame;
export const CLIENT_FRAME_TYPES = ['auth', 'start', 'stdin', 'resize', 'signal', 'ping', 'close'] as const;
export type ClientFrameType = (typeof CLIENT_FRAME_TYPES)[number];
