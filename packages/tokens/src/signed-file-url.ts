import { createHmac, timingSafeEqual } from 'node:crypto';
import { posix } from 'node:path';
import { isNonEmptyString } from './claims.js';
import {
  checkClockTolerance,
  MAX_CLOCK_TOLERANCE_SECONDS,
  systemClock,
  unixSeconds,
  type Clock,
} from './clock.js';
import { keyList, type SigningKey } from './signing-key.js';
import { TokenError } from './token-error.js';

export const FILE_URL_OPERATIONS = ['GET', 'PUT'] as const;
export type FileUrlOperation = (typeof FILE_URL_OPERATIONS)[number];

/** docs/protocol.md#signed-file-urls: short lifetimes stand in for revocation of capability URLs. */
export const DEFAULT_FILE_URL_MAX_TTL_SECONDS = 900;

/**
 * Domain separation: JWT signing input is base64url text around one dot, so
 * it can never start with this prefix nor contain a newline.
 */
const DOMAIN_PREFIX = 'sbx-file-url:v1\n';

const SIGNATURE_TEXT = /^[A-Za-z0-9_-]{43}$/;
const EXP_TEXT = /^[0-9]{1,12}$/;

export interface FileUrlTarget {
  readonly sandboxId: string;
  readonly op: FileUrlOperation;
  /** Workspace path; normalized before signing and verifying. */
  readonly path: string;
}

export interface SignFileUrlOptions extends FileUrlTarget {
  readonly key: SigningKey;
  readonly ttlSeconds: number;
  readonly now?: Clock;
}

/** Query values: `?sig=<sig>&exp=<exp>`. */
export interface SignedFileUrl {
  readonly sig: string;
  readonly exp: string;
  readonly expiresAt: Date;
}

export interface VerifyFileUrlOptions extends FileUrlTarget {
  readonly keys: SigningKey | readonly SigningKey[];
  /** The raw query values, as received. */
  readonly sig: unknown;
  readonly exp: unknown;
  readonly now?: Clock;
  readonly clockToleranceSeconds?: number;
  readonly maxTtlSeconds?: number;
}

export interface VerifiedFileUrl extends FileUrlTarget {
  readonly expiresAt: Date;
}

/** `a//b/./c/` → `/a/b/c`; the path the agent must then serve. */
export function normalizeFileUrlPath(path: string): string {
  if (typeof path !== 'string' || /[\0\n\r]/.test(path)) {
    throw new TokenError('malformed', 'file path contains forbidden characters');
  }
  const normalized = posix.normalize(`/${path}`);
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

export function fileUrlSigningInput(target: FileUrlTarget, exp: number): string {
  if (!isNonEmptyString(target.sandboxId) || /[\0\n\r]/.test(target.sandboxId)) {
    throw new TokenError('malformed', 'sandbox id is empty or contains forbidden characters');
  }
  if (!FILE_URL_OPERATIONS.includes(target.op))
    throw new TokenError('malformed', 'operation must be GET or PUT');
  const path = normalizeFileUrlPath(target.path);
  return `${DOMAIN_PREFIX}${target.sandboxId}\n${target.op}\n${path}\n${exp}`;
}

function signatureOf(key: SigningKey, input: string): string {
  return createHmac('sha256', key.keyObject).update(input, 'utf8').digest('base64url');
}

export function signFileUrl(options: SignFileUrlOptions): SignedFileUrl {
  const { ttlSeconds } = options;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0) {
    throw new RangeError('ttlSeconds must be a positive whole number');
  }
  const exp = unixSeconds(options.now ?? systemClock) + ttlSeconds;
  return {
    sig: signatureOf(options.key, fileUrlSigningInput(options, exp)),
    exp: String(exp),
    expiresAt: new Date(exp * 1000),
  };
}

/** Every key is tried, in constant time, so timing reveals neither the signature nor which key matched. */
function signedByAny(keys: readonly SigningKey[], input: string, sig: string): boolean {
  const presented = Buffer.from(sig, 'latin1');
  let matched = false;
  for (const key of keys) {
    matched = timingSafeEqual(Buffer.from(signatureOf(key, input), 'latin1'), presented) || matched;
  }
  return matched;
}

/** Absent or empty → missing; repeated (an array) or wrongly shaped → malformed. */
function queryValue(value: unknown, shape: RegExp, problem: string): string {
  if (value === undefined || value === null || value === '') {
    throw new TokenError('missing', 'signed URL lacks sig or exp');
  }
  if (typeof value !== 'string' || !shape.test(value)) {
    throw new TokenError('malformed', `signed URL ${problem}`);
  }
  return value;
}

/** Throws TokenError unless `sig` signs exactly this sandbox, operation, path and exp. */
export function verifyFileUrl(options: VerifyFileUrlOptions): VerifiedFileUrl {
  const keys = keyList(options.keys);
  const tolerance = checkClockTolerance(options.clockToleranceSeconds ?? MAX_CLOCK_TOLERANCE_SECONDS);
  const maxTtl = options.maxTtlSeconds ?? DEFAULT_FILE_URL_MAX_TTL_SECONDS;
  const sig = queryValue(options.sig, SIGNATURE_TEXT, 'sig is not an HMAC-SHA256');
  const exp = Number(queryValue(options.exp, EXP_TEXT, 'exp is not a unix time'));
  const input = fileUrlSigningInput(options, exp);
  if (!signedByAny(keys, input, sig)) {
    throw new TokenError('bad_signature', 'signed URL does not match this sandbox, operation and path');
  }
  const now = unixSeconds(options.now ?? systemClock);
  if (now >= exp + tolerance) throw new TokenError('expired', 'signed URL has expired');
  if (exp - now > maxTtl + tolerance) throw new TokenError('ttl_too_long', 'signed URL lives too long');
  return {
    sandboxId: options.sandboxId,
    op: options.op,
    path: normalizeFileUrlPath(options.path),
    expiresAt: new Date(exp * 1000),
  };
}
