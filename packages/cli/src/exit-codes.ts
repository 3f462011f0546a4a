import { SbxError, type ErrorCode } from '@sbx/protocol';
import { TransportError } from '@sbx/client';

/** Exit codes scripts can rely on (README.md lists them). */
export const EXIT = {
  ok: 0,
  /** A remote command failed, or any error not listed below. */
  failed: 1,
  usage: 2,
  /** Not logged in, key rejected, or the key lacks the right. */
  auth: 3,
  notFound: 4,
  /** The broker or the sandbox could not be reached (refused, timed out, unavailable). */
  unreachable: 5,
} as const;

/** Wrong arguments: exit 2. Still the platform's one error type, code BAD_REQUEST. */
export class UsageError extends SbxError {
  constructor(message: string) {
    super('BAD_REQUEST', message);
  }
}

/** Every protocol code's exit code; a new code without one is a compile error. */
const EXIT_OF_CODE: Record<ErrorCode, number> = {
  UNAUTHENTICATED: EXIT.auth,
  FORBIDDEN: EXIT.auth,
  CAPABILITY_DENIED: EXIT.auth,
  NOT_FOUND: EXIT.notFound,
  SESSION_NOT_FOUND: EXIT.notFound,
  BINDING_NOT_FOUND: EXIT.notFound,
  SANDBOX_NOT_FOUND: EXIT.notFound,
  SESSION_EXPIRED: EXIT.notFound,
  TIMEOUT: EXIT.unreachable,
  BACKEND_UNAVAILABLE: EXIT.unreachable,
  PROVIDER_UNAVAILABLE: EXIT.unreachable,
  BAD_REQUEST: EXIT.failed,
  METHOD_NOT_ALLOWED: EXIT.failed,
  CONFLICT: EXIT.failed,
  SESSION_CONFLICT: EXIT.failed,
  BINDING_CONFLICT: EXIT.failed,
  PRECONDITION_FAILED: EXIT.failed,
  PAYLOAD_TOO_LARGE: EXIT.failed,
  UNSUPPORTED_MEDIA_TYPE: EXIT.failed,
  RANGE_NOT_SATISFIABLE: EXIT.failed,
  IDEMPOTENCY_KEY_REUSED: EXIT.failed,
  SANDBOX_STARTING: EXIT.failed,
  RATE_LIMITED: EXIT.failed,
  INTERNAL: EXIT.failed,
  INSUFFICIENT_STORAGE: EXIT.failed,
};

export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof TransportError) return EXIT.unreachable;
  if (!(err instanceof SbxError)) return EXIT.failed;
  return EXIT_OF_CODE[err.code];
}

/** One line for a human: the message, plus what to do for the common failures. */
export function errorLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const firstLine = message.split('\n')[0] ?? message;
  const code = exitCodeOf(err);
  if (code === EXIT.unreachable && !(err instanceof SbxError && err.code === 'PROVIDER_UNAVAILABLE')) {
    // The broker, the sandbox's agent or an OIDC issuer: the message names which address failed.
    return `sbx: ${firstLine} (is the broker running? \`sbx doctor\` checks the broker and a sandbox)`;
  }
  // Not while logging in: the line says that already.
  const loggingIn = firstLine.includes('sbx login') || firstLine.startsWith('logging in to ');
  if (err instanceof SbxError && err.code === 'UNAUTHENTICATED' && !loggingIn) {
    return `sbx: ${firstLine} (log in again: sbx login --broker <url> with --api-key <key> or --device)`;
  }
  return `sbx: ${firstLine}`;
}
