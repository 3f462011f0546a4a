import { SbxError } from '@sbx/protocol';

/**
 * Redis answered but refused the command (WRONGTYPE, a Lua error…): a bug on
 * our side, not an outage. ioredis marks these with the name 'ReplyError'.
 */
function isReplyError(err: unknown): err is Error {
  return err instanceof Error && err.name === 'ReplyError';
}

/**
 * Everything else (refused or dropped connections, command timeouts, retries
 * exhausted) means Redis is unavailable right now: retryable, cause kept.
 */
export function toCoordinationError(err: unknown, operation: string): SbxError {
  if (err instanceof SbxError) return err;
  if (isReplyError(err)) {
    return new SbxError('INTERNAL', `Redis refused ${operation}: ${err.message}`, { cause: err });
  }
  const reason = err instanceof Error ? err.message : String(err);
  return new SbxError('BACKEND_UNAVAILABLE', `Redis unavailable during ${operation}: ${reason}`, {
    cause: err,
  });
}

/** host:port of a Redis URL without credentials, for error messages. */
export function describeRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return 'the configured Redis URL';
  }
}
