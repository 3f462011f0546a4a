import { SbxError } from '@sbx/protocol';
import { TransportError } from '@sbx/client';

/** One request to the issuer may take this long; a person is waiting at the terminal. */
const ISSUER_TIMEOUT_MS = 15_000;

/**
 * Codes, tokens and refresh tokens cross the issuer's URLs, so they must be https. Plain
 * http is allowed to this machine only (a local or test issuer): nothing leaves the host.
 * Returns what is wrong with `value`, or undefined when it is acceptable.
 */
export function insecureUrlProblem(value: string): string | undefined {
  if (!URL.canParse(value)) return `${value} is not a URL`;
  const url = new URL(value);
  if (url.protocol === 'https:') return undefined;
  const loopback =
    url.hostname === 'localhost' || url.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (url.protocol === 'http:' && loopback) return undefined;
  return `${value} must use https (plain http only on 127.0.0.1, ::1 or localhost)`;
}

export interface IssuerAnswer {
  readonly status: number;
  /** The parsed JSON body; undefined when the body was not JSON. */
  readonly body: unknown;
}

/** GET, or POST of an `application/x-www-form-urlencoded` body (RFC 6749 §4.1.3), answered in JSON. */
export async function issuerRequest(
  url: string,
  what: string,
  form?: Readonly<Record<string, string | undefined>>,
): Promise<IssuerAnswer> {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(form ?? {})) if (value !== undefined) params.set(name, value);
  let response: Response;
  try {
    response = await fetch(url, {
      method: form === undefined ? 'GET' : 'POST',
      headers: {
        accept: 'application/json',
        ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      ...(form === undefined ? {} : { body: params.toString() }),
      signal: AbortSignal.timeout(ISSUER_TIMEOUT_MS),
    });
  } catch (err) {
    const detail = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
    throw new TransportError(`${what}: could not reach the issuer (${detail})`, {
      cause: err,
    });
  }
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    // The body stalled past the timeout or the connection broke half way: as unreachable.
    throw new TransportError(`${what}: the issuer's answer did not arrive (${String(err)})`, {
      cause: err,
    });
  }
  return { status: response.status, body: parseJson(text) };
}

/** The issuer is down or busy for now (5xx, 429): worth asking again later. */
export const isUnavailableStatus = (status: number): boolean => status >= 500 || status === 429;

/**
 * An answer that is neither the success nor an OAuth error. A 5xx or 429 is a
 * TransportError, as a refused connection is: the device login backs off and keeps
 * polling (RFC 8628 §3.5), a refresh keeps using a token that still works.
 */
export function unexpectedAnswer(what: string, answer: IssuerAnswer): SbxError {
  if (isUnavailableStatus(answer.status)) {
    return new TransportError(`${what}: the issuer is unavailable (HTTP ${answer.status})`, {
      httpStatus: answer.status,
    });
  }
  return new SbxError('BAD_REQUEST', `${what}: unexpected answer from the issuer (HTTP ${answer.status})`);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
