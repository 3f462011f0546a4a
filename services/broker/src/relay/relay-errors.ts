import type { ServerResponse } from 'node:http';
import { SbxError } from '@sbx/protocol';

/** Why the relay gave up on the agent's answer: no response headers within the timeout. */
export class RelayTimeout extends Error {
  constructor() {
    super('the sandbox agent did not answer in time');
  }
}

/** The id the broker's `assignRequestId` put on the response, if it ran. */
export function requestIdOf(res: ServerResponse): string | undefined {
  const id = res.getHeader('x-request-id');
  return typeof id === 'string' ? id : undefined;
}

export interface GatewayError {
  readonly status: 502 | 504;
  readonly error: SbxError;
  readonly failure: 'unreachable' | 'timeout';
}

/**
 * What the caller is told when the agent gave no answer. The codes are the table's
 * (PROVIDER_UNAVAILABLE, TIMEOUT: retryable); the status is a gateway's, 502 or 504, so
 * that a caller and any proxy between can tell "the broker could not reach the sandbox"
 * from "the broker itself is unavailable" (503).
 */
export function gatewayError(err: Error): GatewayError {
  if (err instanceof RelayTimeout) {
    return { status: 504, error: new SbxError('TIMEOUT', err.message), failure: 'timeout' };
  }
  return {
    status: 502,
    error: new SbxError('PROVIDER_UNAVAILABLE', 'the sandbox agent is unreachable', { retryAfterSeconds: 5 }),
    failure: 'unreachable',
  };
}

/**
 * The broker's error envelope (`{error:{code,message,retryable,request_id}}`) with the
 * gateway's status. A caller still uploading gets `Connection: close`, so the rest of its
 * body is not read.
 */
export function sendEnvelope(res: ServerResponse, gateway: GatewayError, closeAfter: boolean): void {
  const body = JSON.stringify(gateway.error.toEnvelope(requestIdOf(res)));
  res.statusCode = gateway.status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.setHeader('cache-control', 'no-store');
  const retryAfter = gateway.error.retryAfterSeconds;
  if (retryAfter !== undefined) res.setHeader('retry-after', String(retryAfter));
  if (closeAfter) res.setHeader('connection', 'close');
  res.end(body);
}
