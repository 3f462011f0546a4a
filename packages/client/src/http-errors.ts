import { ErrorEnvelope, type ErrorCode } from '@sbx/protocol';
import { BackendUnavailableError, TimeoutError, clientError, type SbxClientError } from './errors.js';

/** The network failed before an answer arrived (refused, reset, DNS). Retried for idempotent calls. */
export class TransportError extends BackendUnavailableError {}

/** When the server sent no error envelope, the status alone decides the code. */
function codeOfStatus(status: number): ErrorCode {
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
    case 416:
      return 'RANGE_NOT_SATISFIABLE';
    case 423:
      return 'SANDBOX_STARTING';
    case 429:
      return 'RATE_LIMITED';
    case 503:
      return 'BACKEND_UNAVAILABLE';
    case 504:
      return 'TIMEOUT';
    case 507:
      return 'INSUFFICIENT_STORAGE';
    default:
      return status >= 500 ? 'INTERNAL' : 'BAD_REQUEST';
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

/** The typed error of a non-2xx answer, from its envelope when it has one. */
export async function errorOfResponse(response: Response, what: string): Promise<SbxClientError> {
  const text = await response.text().catch(() => '');
  const retryAfterSeconds = retryAfterOf(response);
  const common = {
    httpStatus: response.status,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  };
  const envelope = ErrorEnvelope.safeParse(safeJson(text));
  if (envelope.success) {
    const { code, message, details, request_id: requestId } = envelope.data.error;
    const suffix = requestId === undefined ? '' : ` (request ${requestId})`;
    return clientError(code, `${what}: ${message}${suffix}`, {
      ...common,
      ...(details === undefined ? {} : { details }),
    });
  }
  const code = codeOfStatus(response.status);
  return clientError(code, `${what}: HTTP ${response.status} ${response.statusText}`.trim(), common);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function timeoutError(what: string, timeoutMs: number): TimeoutError {
  return new TimeoutError('TIMEOUT', `${what}: no answer within ${timeoutMs} ms; raise timeoutMs or retry`);
}

export function transportError(what: string, cause: unknown): TransportError {
  const detail = cause instanceof Error && cause.cause instanceof Error ? cause.cause.message : String(cause);
  return new TransportError('BACKEND_UNAVAILABLE', `${what}: could not reach the server (${detail})`, {
    cause,
  });
}
