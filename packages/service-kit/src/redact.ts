/**
 * Scrubbing of secrets from log records. Structured paths are redacted by pino;
 * this catches what structure cannot: tokens inside URLs and free text.
 */
export const REDACTED = '[REDACTED]';

const SECRET_KEYS = new Set([
  'authorization',
  'token',
  'access_token',
  'refresh_token',
  'current_token',
  'id_token',
  'device_code',
  'api_key',
  'apikey',
  'password',
  'secret',
  'signing_key',
  'sig',
  'cookie',
  'set-cookie',
  'x-api-key',
]);

const QUERY_SECRET = /([?&](?:token|access_token|sig|api_key|code)=)[^&#\s"]*/gi;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/g;
const JWT_LIKE = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
const API_KEY_LIKE = /\bsbk_[A-Za-z0-9_-]{8,}/g;

export function scrubText(text: string): string {
  return text
    .replace(QUERY_SECRET, `$1${REDACTED}`)
    .replace(BEARER, `$1 ${REDACTED}`)
    .replace(JWT_LIKE, REDACTED)
    .replace(API_KEY_LIKE, REDACTED);
}

export function isSecretKey(key: string): boolean {
  return SECRET_KEYS.has(key.toLowerCase());
}

/** A deep copy with secret-named fields replaced and every string scrubbed. */
export function scrubValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return value;
  if (Array.isArray(value)) return value.map((item) => scrubValue(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = isSecretKey(key) ? REDACTED : scrubValue(item, depth + 1);
  }
  return out;
}
