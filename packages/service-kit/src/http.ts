import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { SbxError } from '@sbx/protocol';
import type { Logger } from 'pino';
import { runWithRequestId } from './request-context.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id of a response: the caller's `X-Request-Id` when well formed, else a new one. */
export function requestIdOf(res: Response): string {
  const id: unknown = res.locals['requestId'];
  return typeof id === 'string' ? id : 'req_unknown';
}

export const assignRequestId: RequestHandler = (req, res, next) => {
  const given = req.get('x-request-id');
  const id = given !== undefined && REQUEST_ID.test(given) ? given : `req_${randomUUID()}`;
  res.locals['requestId'] = id;
  res.setHeader('X-Request-Id', id);
  // Log lines written while serving the request carry its id (createLogger's mixin).
  runWithRequestId(id, next);
};

/**
 * Re-enters the request's log context, for a chain resumed from a callback outside it
 * (express.json on Node 20 keeps it; a parser that did not would lose it). After assignRequestId.
 */
export const requestContext: RequestHandler = (_req, res, next) => {
  runWithRequestId(requestIdOf(res), next);
};

/**
 * A JSON answer that is already text (an agent's answer the broker relays): one write, with
 * no re-serialization and no ETag (an answer to a POST is not cached).
 */
export function sendJsonText(res: Response, status: number, text: string): void {
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Writes an error in the protocol's envelope, with the headers its code calls for. */
export function sendError(res: Response, error: SbxError): void {
  if (res.headersSent) {
    res.destroy(error);
    return;
  }
  if (error.code === 'UNAUTHENTICATED') res.setHeader('WWW-Authenticate', 'Bearer');
  if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
  res.status(error.status).json(error.toEnvelope(requestIdOf(res)));
}

export const notFound: RequestHandler = (req, res) => {
  sendError(res, new SbxError('NOT_FOUND', `no route for ${req.method} ${req.path}`));
};

/**
 * Neither service serves OPTIONS: CORS preflights are answered by `corsAllowlist` before this
 * runs. Without it Express answers OPTIONS itself on any path a route serves (200, an `Allow`
 * list, a text body), an answer no route documents; with it OPTIONS is 404 like any method no
 * route serves (docs/security.md, "Hardening").
 */
export const refuseOptions: RequestHandler = (req, res, next) => {
  if (req.method === 'OPTIONS') notFound(req, res, next);
  else next();
};

/** Errors Express and its body parsers raise carry an HTTP `status` and, for bodies, a `type`. */
interface HttpLayerError {
  readonly status: number;
  readonly type?: unknown;
}

function isHttpLayerError(err: unknown): err is HttpLayerError {
  return typeof err === 'object' && err !== null && 'status' in err && typeof err.status === 'number';
}

/** Maps Express and body-parser failures to protocol codes; anything else unknown becomes INTERNAL. */
function toSbxError(err: unknown): SbxError {
  if (err instanceof SbxError) return err;
  if (isHttpLayerError(err) && err.status >= 400 && err.status < 500) {
    if (err.type === 'entity.too.large')
      return new SbxError('PAYLOAD_TOO_LARGE', 'request body is too large');
    if (err.type === 'entity.parse.failed')
      return new SbxError('BAD_REQUEST', 'request body is not valid JSON');
    // The router's own failure to percent-decode a path parameter.
    if (err instanceof URIError)
      return new SbxError('BAD_REQUEST', 'request path is not valid percent-encoding');
    return new SbxError('BAD_REQUEST', 'request could not be read');
  }
  return SbxError.from(err);
}

/** The last middleware: every failure leaves as an envelope; INTERNAL causes go to the log only. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    const error = toSbxError(err);
    if (error.code === 'INTERNAL') {
      logger.error(
        { err: error.cause ?? error, request_id: requestIdOf(res), route: req.path },
        'internal error',
      );
    }
    sendError(res, error);
  };
}
