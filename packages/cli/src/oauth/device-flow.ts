import { setTimeout as sleep } from 'node:timers/promises';
import { SbxError } from '@sbx/protocol';
import { TransportError } from '@sbx/client';
import { isRecord, issuerRequest, unexpectedAnswer } from './issuer-http.js';
import {
  DEVICE_CODE_GRANT,
  OAuthError,
  oauthErrorOf,
  positiveNumber,
  requestToken,
  type TokenResponse,
} from './token-endpoint.js';

/** The device authorization response (RFC 8628 §3.2). */
export interface DeviceAuthorization {
  readonly device_code: string;
  readonly user_code: string;
  readonly verification_uri: string;
  readonly verification_uri_complete?: string;
  /** Seconds the device code lives. */
  readonly expires_in: number;
  /** Seconds to wait between polls (RFC 8628: default 5). */
  readonly interval: number;
}

export interface DeviceRequest {
  readonly clientId: string;
  readonly scope: string;
  /** Sent as `audience` when set (issuers that mint tokens per API, e.g. Auth0). */
  readonly audience?: string;
}

const DEFAULT_INTERVAL_SECONDS = 5;
/** RFC 8628 §3.5: every slow_down adds 5 seconds to the interval, for good. */
const SLOW_DOWN_SECONDS = 5;
/** Backoff after a failed connection stops doubling here. */
const MAX_INTERVAL_SECONDS = 60;

/** Step 1 (RFC 8628 §3.1): a device code for this client and the code the user types. */
export async function startDeviceAuthorization(
  endpoint: string,
  request: DeviceRequest,
): Promise<DeviceAuthorization> {
  const what = 'start the device login';
  const form = { client_id: request.clientId, scope: request.scope, audience: request.audience };
  const answer = await issuerRequest(endpoint, what, form);
  const body = answer.body;
  if (answer.status >= 400 && answer.status < 500 && isRecord(body) && typeof body['error'] === 'string') {
    throw oauthErrorOf(body, what);
  }
  if (answer.status !== 200 || !isRecord(body)) throw unexpectedAnswer(what, answer);
  const missing = (name: string): SbxError =>
    new SbxError('BAD_REQUEST', `${what}: no ${name} in the answer`);
  const text = (name: string): string => {
    const value = body[name];
    if (typeof value !== 'string' || value === '') throw missing(name);
    return value;
  };
  const complete = body['verification_uri_complete'];
  return {
    device_code: text('device_code'),
    user_code: text('user_code'),
    verification_uri: text('verification_uri'),
    ...(typeof complete === 'string' && complete !== '' ? { verification_uri_complete: complete } : {}),
    expires_in: positiveNumber(body['expires_in']) ?? fail(missing('expires_in')),
    interval: positiveNumber(body['interval']) ?? DEFAULT_INTERVAL_SECONDS,
  };
}

/**
 * Step 2 (RFC 8628 §3.4, §3.5): polls the token endpoint until the user approves. Waits
 * `interval` seconds before every poll; `authorization_pending` polls again,
 * `slow_down` adds 5 seconds to the interval, `access_denied` and `expired_token` end
 * the login, and so does the device code's own `expires_in` passing. A connection that
 * fails, an answer that stalls, or an issuer answering 5xx or 429 doubles the interval
 * (§3.5: back off) and polls again.
 */
export async function pollForToken(
  tokenEndpoint: string,
  clientId: string,
  authorization: DeviceAuthorization,
): Promise<TokenResponse> {
  const deadline = Date.now() + authorization.expires_in * 1000;
  const form = { grant_type: DEVICE_CODE_GRANT, device_code: authorization.device_code, client_id: clientId };
  let intervalSeconds = authorization.interval;
  for (;;) {
    await sleep(intervalSeconds * 1000);
    if (Date.now() >= deadline) throw codeExpired();
    try {
      return await requestToken(tokenEndpoint, form, 'device login');
    } catch (err) {
      if (err instanceof TransportError)
        intervalSeconds = Math.min(intervalSeconds * 2, MAX_INTERVAL_SECONDS);
      else if (!(err instanceof OAuthError)) throw err;
      else if (err.error === 'slow_down') intervalSeconds += SLOW_DOWN_SECONDS;
      else if (err.error === 'access_denied') throw denied();
      else if (err.error === 'expired_token') throw codeExpired();
      else if (err.error !== 'authorization_pending') throw err;
    }
  }
}

const denied = (): SbxError =>
  new SbxError(
    'UNAUTHENTICATED',
    'device login: access denied at the issuer; nothing was saved (run sbx login again to retry)',
  );

const codeExpired = (): SbxError =>
  new SbxError(
    'UNAUTHENTICATED',
    'device login: the code expired before it was approved; nothing was saved (run sbx login again)',
  );

function fail(err: Error): never {
  throw err;
}
