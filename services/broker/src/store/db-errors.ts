// Database errors as SbxErrors. Prisma reports a constraint violation with a
// P-code and, through driver adapters, the driver's error under
// `meta.driverAdapterError.cause`; adapter-pg names the violated index while
// pglite-prisma-adapter lists its columns, so the constraint name is read from
// whichever is there, falling back to Postgres's own message.
import { SbxError, type ErrorCode } from '@sbx/protocol';

interface PrismaKnownError {
  readonly code: string;
  /** `meta.driverAdapterError.cause`, when the error came through a driver adapter. */
  readonly cause: DriverCause | undefined;
}

interface DriverCause {
  readonly kind: string | undefined;
  /** Postgres's SQLSTATE, for an error the adapter passed on as `kind: "postgres"`. */
  readonly sqlState: string | undefined;
  /** The violated index, as adapter-pg reports it. */
  readonly index: string | undefined;
  readonly message: string | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function stringAt(record: Record<string, unknown> | undefined, key: string): string | undefined {
  const value = record?.[key];
  return typeof value === 'string' ? value : undefined;
}

function recordAt(
  record: Record<string, unknown> | undefined,
  key: string,
): Record<string, unknown> | undefined {
  const value = record?.[key];
  return isRecord(value) ? value : undefined;
}

const UNAVAILABLE_KINDS = new Set([
  'DatabaseNotReachable',
  'DatabaseDoesNotExist',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TlsConnectionError',
  'AuthenticationFailed',
]);

// P1xxx: cannot reach / authenticate / time out; P2024: pool timeout; P2037: too many connections.
const UNAVAILABLE_CODES = /^(P1\d{3}|P2024|P2037)$/;

// SQLSTATEs of a server going away or not there yet: class 08 (connection exception),
// 57P01 admin_shutdown (a fast stop ends every session), 57P02 crash_shutdown, 57P03
// cannot_connect_now (starting up or shutting down), 53300 too_many_connections.
// Found by reliability/broker-faults/postgres-restart.test.ts: a restart answered 500.
const UNAVAILABLE_SQLSTATES = /^(08\w{3}|57P0[123]|53300)$/;

// SQLSTATE 53100 disk_full: Postgres (or PGlite, on the broker's data directory) could not
// extend a file. Nothing was written; the database stays usable and answers again once space
// is freed, which a retry soon will not bring: 507, as the protocol says for ENOSPC. Found by
// reliability/disk/host-full.test.ts, where a full disk answered 500 INTERNAL.
const DISK_FULL_SQLSTATE = '53100';

function asKnown(err: unknown): PrismaKnownError | undefined {
  if (!isRecord(err)) return undefined;
  const code = stringAt(err, 'code');
  if (code === undefined || !/^P\d{4}$/.test(code)) return undefined;
  const cause = recordAt(recordAt(recordAt(err, 'meta'), 'driverAdapterError'), 'cause');
  return {
    code,
    cause:
      cause === undefined
        ? undefined
        : {
            kind: stringAt(cause, 'kind'),
            sqlState: stringAt(cause, 'originalCode') ?? stringAt(cause, 'code'),
            index: stringAt(recordAt(cause, 'constraint'), 'index'),
            message: stringAt(cause, 'originalMessage') ?? stringAt(cause, 'message'),
          },
  };
}

/** The Prisma error code (P2002, …), if `err` is a Prisma request error. */
export function prismaCode(err: unknown): string | undefined {
  return asKnown(err)?.code;
}

/** The name of the violated constraint or index, when the database said which. */
export function violatedConstraint(err: unknown): string | undefined {
  const cause = asKnown(err)?.cause;
  if (cause?.index) return cause.index;
  const text = cause?.message ?? stringAt(isRecord(err) ? err : undefined, 'message') ?? '';
  return /constraint "([^"]+)"/.exec(text)?.[1];
}

/** True for a unique violation, of `constraint` when given. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (prismaCode(err) !== 'P2002') return false;
  return constraint === undefined || violatedConstraint(err) === constraint;
}

/** True when the record an update or delete needed does not exist (P2025). */
export function isRecordNotFound(err: unknown): boolean {
  return prismaCode(err) === 'P2025';
}

export interface ConstraintMapping {
  /** Constraint or index name → the SbxError to raise when it is violated. */
  readonly [constraint: string]: { readonly code: ErrorCode; readonly message: string };
}

/**
 * Maps a database failure to an SbxError: known constraints as given, any
 * other unique violation as CONFLICT, a database out of disk space as
 * INSUFFICIENT_STORAGE, a lost or unreachable database as
 * BACKEND_UNAVAILABLE, anything else as INTERNAL. The original error is kept
 * as `cause`, for logs only.
 */
export function toSbxError(err: unknown, action: string, constraints: ConstraintMapping = {}): SbxError {
  if (err instanceof SbxError) return err;
  const known = asKnown(err);
  const cause = known?.cause;
  const constraint = violatedConstraint(err);
  if (known && constraint !== undefined && constraints[constraint]) {
    const mapped = constraints[constraint];
    return new SbxError(mapped.code, mapped.message, { cause: err, details: { constraint } });
  }
  if (known?.code === 'P2002') {
    return new SbxError('CONFLICT', `${action}: the record already exists`, {
      cause: err,
      ...(constraint === undefined ? {} : { details: { constraint } }),
    });
  }
  if (cause?.sqlState === DISK_FULL_SQLSTATE || isNoSpace(err)) {
    return new SbxError('INSUFFICIENT_STORAGE', `${action}: the broker's database is out of disk space`, {
      cause: err,
    });
  }
  if (
    (known && UNAVAILABLE_CODES.test(known.code)) ||
    (cause?.kind !== undefined && UNAVAILABLE_KINDS.has(cause.kind)) ||
    (cause?.sqlState !== undefined && UNAVAILABLE_SQLSTATES.test(cause.sqlState)) ||
    isInitializationError(err) ||
    isConnectionRefused(err)
  ) {
    return new SbxError('BACKEND_UNAVAILABLE', `${action}: the database is unavailable`, { cause: err });
  }
  return new SbxError('INTERNAL', `${action}: database error`, { cause: err });
}

// Errors are inspected by shape, never with `instanceof Error`: drivers and
// jest's vm contexts create them in other realms.
function isInitializationError(err: unknown): boolean {
  return isRecord(err) && err['name'] === 'PrismaClientInitializationError';
}

/** Whether `err` or one of its causes carries one of `codes` (a Node system error's `code`). */
function hasCauseCode(err: unknown, codes: ReadonlySet<string>): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && isRecord(current); depth++) {
    const code = stringAt(current, 'code');
    if (code !== undefined && codes.has(code)) return true;
    current = current.cause;
  }
  return false;
}

const CONNECTION_LOST = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND']);
function isConnectionRefused(err: unknown): boolean {
  return hasCauseCode(err, CONNECTION_LOST);
}

// The embedded database's own files (its lock, its directory) on a full disk or over a quota.
const NO_SPACE = new Set(['ENOSPC', 'EDQUOT']);
function isNoSpace(err: unknown): boolean {
  return hasCauseCode(err, NO_SPACE);
}

/** Runs `fn`, turning any failure into an SbxError via {@link toSbxError}. */
export async function guard<T>(
  action: string,
  fn: () => Promise<T>,
  constraints?: ConstraintMapping,
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toSbxError(err, action, constraints);
  }
}
