import {
  answerCutOff,
  errorOfResponse,
  malformedAnswer,
  timeoutError,
  transportError,
  TransportError,
} from './http-errors.js';
import { routeOf } from './protocol-error.js';
import { abortReason, isRetryable, withRetry, type RetryPolicy } from './retry.js';

/** Every SDK call takes these. */
export interface CallOptions {
  /** The whole call, retries and backoff included; default the client's `timeoutMs`. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface HttpEndpoint {
  readonly baseUrl: string;
  /** The bearer credential, asked for at every attempt (it may have been refreshed since). */
  readonly bearer: () => string | Promise<string>;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
}

export type RequestBody = Uint8Array | string | ReadableStream<Uint8Array> | { readonly json: unknown };

export interface HttpRequest {
  readonly method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly query?: Readonly<Record<string, string | undefined>>;
  readonly body?: RequestBody;
  readonly headers?: Readonly<Record<string, string>>;
  /** Sending it twice does no harm, so a transport failure may be retried too. */
  readonly idempotent: boolean;
  /** Keep the deadline for headers only, so a long download is not cut off. */
  readonly streamResponse?: boolean;
  /** What the request does, for error messages ("read /a.txt"). */
  readonly what: string;
}

function urlOf(endpoint: HttpEndpoint, request: HttpRequest): string {
  const url = new URL(
    request.path,
    endpoint.baseUrl.endsWith('/') ? endpoint.baseUrl : `${endpoint.baseUrl}/`,
  );
  for (const [name, value] of Object.entries(request.query ?? {})) {
    if (value !== undefined) url.searchParams.set(name, value);
  }
  return url.toString();
}

function bodyInit(body: RequestBody | undefined): {
  body?: RequestInit['body'];
  type?: string;
  duplex?: 'half';
} {
  if (body === undefined) return {};
  if (body instanceof ReadableStream) return { body, duplex: 'half', type: 'application/octet-stream' };
  if (typeof body === 'string') return { body, type: 'text/plain; charset=utf-8' };
  if (body instanceof Uint8Array) return { body, type: 'application/octet-stream' };
  return { body: JSON.stringify(body.json), type: 'application/json' };
}

interface Deadline {
  readonly signal: AbortSignal;
  readonly timedOut: () => boolean;
  clear(): void;
}

function deadlineOf(timeoutMs: number, signal: AbortSignal | undefined): Deadline {
  const timer = new AbortController();
  const handle = setTimeout(() => timer.abort(), timeoutMs);
  return {
    signal: signal === undefined ? timer.signal : AbortSignal.any([signal, timer.signal]),
    timedOut: () => timer.signal.aborted && signal?.aborted !== true,
    clear: () => clearTimeout(handle),
  };
}

async function attemptOnce(
  endpoint: HttpEndpoint,
  request: HttpRequest,
  signal: AbortSignal,
): Promise<Response> {
  const init = bodyInit(request.body);
  const headers: Record<string, string> = {
    authorization: `Bearer ${await endpoint.bearer()}`,
    ...(init.type === undefined ? {} : { 'content-type': init.type }),
    ...request.headers,
  };
  const url = urlOf(endpoint, request);
  let response: Response;
  try {
    response = await fetch(url, {
      method: request.method,
      headers,
      signal,
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(init.duplex === undefined ? {} : { duplex: init.duplex }),
    });
  } catch (err) {
    if (signal.aborted) throw abortReason(signal);
    throw transportError(request.what, err, request.idempotent ? 'no' : 'maybe');
  }
  if (response.ok || response.status === 304) return response;
  throw await errorOfResponse(response, request.what, routeOf(request.method, url));
}

/**
 * One HTTP call with the SDK's rules: bearer auth, a deadline over all attempts, retries
 * with backoff for answers that say "try again" (never for 401/403), transport failures
 * retried only for idempotent requests, and a request with a stream body sent once.
 */
export async function httpCall(
  endpoint: HttpEndpoint,
  request: HttpRequest,
  options: CallOptions = {},
): Promise<Response> {
  const timeoutMs = options.timeoutMs ?? endpoint.timeoutMs;
  const deadline = deadlineOf(timeoutMs, options.signal);
  const policy =
    request.body instanceof ReadableStream ? { ...endpoint.retry, maxAttempts: 1 } : endpoint.retry;
  const canRetry = (err: unknown): boolean =>
    isRetryable(err) && (request.idempotent || !(err instanceof TransportError));
  try {
    const response = await withRetry(
      () => attemptOnce(endpoint, request, deadline.signal),
      policy,
      deadline.signal,
      canRetry,
    );
    if (request.streamResponse === true) deadline.clear();
    return response;
  } catch (err) {
    if (deadline.timedOut()) throw timeoutError(request.what, timeoutMs);
    throw err;
  } finally {
    if (request.streamResponse !== true) deadline.clear();
  }
}

/**
 * `httpCall`, then the body parsed with `parse` (a zod schema's `parse`). A body that is
 * not JSON or not the schema is a ProtocolError naming the route, never a bare
 * SyntaxError or ZodError; a connection cut while reading it is a TransportError.
 */
export async function httpJson<T>(
  endpoint: HttpEndpoint,
  request: HttpRequest,
  parse: (value: unknown) => T,
  options: CallOptions = {},
): Promise<T> {
  const response = await httpCall(endpoint, request, options);
  let text: string;
  try {
    text = await response.text();
  } catch (err) {
    if (options.signal?.aborted === true) throw abortReason(options.signal);
    throw answerCutOff(request.what, err);
  }
  try {
    return parse(JSON.parse(text));
  } catch (err) {
    const route = routeOf(request.method, urlOf(endpoint, request));
    throw malformedAnswer(request.what, route, response.status, err);
  }
}
