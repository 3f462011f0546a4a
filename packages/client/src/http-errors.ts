import { ErrorEnvelope, type ErrorCode } from '@sbx/protocol';
import { BackendUnavailableError, TimeoutError, clientError, type SbxClientError } from './errors.js';
import { ProtocolError, problemOf } from './protocol-error.js';

/** The network failed before an answer arrived (refused, reset, DNS). Retried for idempotent calls. */
export class TransportError extends BackendUnavailableError {}

/**
 * When the server sent no error envelope, the status alone decides the code, for the
 * statuses of the protocol's table only (a proxy's 429 or 503 still means "try again");
 * where several codes share a status, the broadest. Any other status is a ProtocolError.
 * A test checks this against ERROR_TABLE.
 */
function codeOfStatus(status: number): ErrorCode | undefined {
  switch (status) {
    case 400:
      return 'BAD_REQUEST';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 405:
      return 'METHOD_NOT_ALLOWED';
    case 409:
      return 'CONFLICT';
    case 410:
      return 'SESSION_EXPIRED';
    case 412:
      return 'PRECONDITION_FAILED';
    case 413:
      return 'PAYLOAD_TOO_LARGE';
    case 415:
      return 'UNSUPPORTED_MEDIA_TYPE';
    case 416:
      return 'RANGE_NOT_SATISFIABLE';
    case 422:
      return 'IDEMPOTENCY_KEY_REUSED';
    case 423:
      return 'SANDBOX_STARTING';
    case 429:
      return 'RATE_LIMITED';
    case 500:
      return 'INTERNAL';
    case 503:
      return 'BACKEND_UNAVAILABLE';
    case 504:
      return 'TIMEOUT';
    case 507:
      return 'INSUFFICIENT_STORAGE';
    default:
      return undefined;
  }
}

/** `Retry-After` in seconds (delta form only; an HTTP date is read as "now"). */
function retryAfterOf(response: Response): number | undefined {
  const header = response.headers.get('retry-after');
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

/** The typed error of a non-2xx answer to `route`, from its envelope when it has one. */
export async function errorOfResponse(
  response: Response,
  what: string,
  route: string,
): Promise<SbxClientError> {
  const text = await response.text().catch(() => '');
  const retryAfterSeconds = retryAfterOf(response);
  const common = {
    httpStatus: response.status,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  };
  const json = parseJson(text);
  const envelope = ErrorEnvelope.safeParse(json.value);
  if (envelope.success) {
    const { code, message, details, request_id: requestId } = envelope.data.error;
    const suffix = requestId === undefined ? '' : ` (request ${requestId})`;
    return clientError(code, `${what}: ${message}${suffix}`, {
      ...common,
      ...(details === undefined ? {} : { details }),
    });
  }
  const status = `HTTP ${response.status} ${response.statusText}`.trim();
  const code = codeOfStatus(response.status);
  if (code !== undefined) return clientError(code, `${what}: ${status}`, common);
  const message = `${what}: ${route} answered ${status} (${mediaTypeOf(response)}) without an error envelope`;
  return new ProtocolError(message, { ...common, route, cause: json.error ?? envelope.error });
}

/** A 2xx answer to `route` whose body `cause` says is not JSON or not the route's schema. */
export function malformedAnswer(what: string, route: string, status: number, cause: unknown): ProtocolError {
  const message = `${what}: ${route} answered HTTP ${status} with a body that ${problemOf(cause)}`;
  return new ProtocolError(message, { route, httpStatus: status, cause });
}

function parseJson(text: string): { readonly value?: unknown; readonly error?: unknown } {
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    return { error };
  }
}

/** The media type alone, short: enough to tell an HTML error page from JSON. */
function mediaTypeOf(response: Response): string {
  const type = response.headers.get('content-type')?.split(';')[0]?.trim() ?? '';
  return type === '' ? 'no content type' : type.slice(0, 64);
}

export function timeoutError(what: string, timeoutMs: number): TimeoutError {
  return new TimeoutError(`${what}: no answer within ${timeoutMs} ms; raise timeoutMs or retry`);
}

/** The innermost message (fetch's `TypeError: fetch failed` says less than its cause). */
function detailOf(cause: unknown): string {
  const inner: unknown = cause instanceof Error && cause.cause instanceof Error ? cause.cause : cause;
  return inner instanceof Error ? inner.message : String(inner);
}

/** The connection failed before an answer came; `sent` requests may have reached the server. */
export function transportError(what: string, cause: unknown, sent: 'maybe' | 'no' = 'no'): TransportError {
  const detail = detailOf(cause);
  const refused = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN/.test(`${detail} ${String(cause)}`);
  const message =
    sent === 'maybe' && !refused
      ? `${what}: the connection failed before the answer came (${detail}); the request may have reached the server and run, so it was not retried`
      : `${what}: could not reach the server (${detail})`;
  return new TransportError(message, { cause });
}

/** The connection broke while the answer's body was read: the request was served, its answer is lost. */
export function answerCutOff(what: string, cause: unknown): TransportError {
  return new TransportError(
    `${what}: the connection was lost while the answer was read (${detailOf(cause)}); the request reached the server`,
    { cause },
  );
}
