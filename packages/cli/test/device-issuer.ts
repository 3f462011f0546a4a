// RFC 8628 on top of the broker's test OIDC issuer (its addRoute / discoveryExtras hook):
// a device authorization endpoint and a token endpoint for the device-code and
// refresh-token grants. The test plays the user: it approves, denies or expires a user
// code it read from the CLI's output. Every token request is recorded with its answer.
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  startTestOidcIssuer,
  type TestOidcIssuer,
} from '../../../services/broker/test/support/test-oidc-issuer.js';

export interface DeviceCode {
  readonly userCode: string;
  readonly deviceCode: string;
  readonly scope: string;
  status: 'pending' | 'approved' | 'denied' | 'used';
  sub?: string;
  /** The interval the issuer currently demands, in seconds (slow_down raises it by 5). */
  intervalSeconds: number;
  expiresAt: number;
  /** Arrival times (ms) of this code's token requests. */
  readonly polls: number[];
  /** Answer the next poll with slow_down, however well spaced (a compliant CLI never polls too fast). */
  slowDownNextPoll: boolean;
}

export interface TokenRequest {
  readonly grantType: string;
  readonly at: number;
  readonly status: number;
  /** The OAuth error answered, undefined for tokens. */
  readonly error: string | undefined;
}

export interface DeviceIssuer {
  readonly oidc: TestOidcIssuer;
  readonly clientId: string;
  /** Settings for device codes and tokens issued from now on (seconds). */
  interval: number;
  expiresIn: number;
  accessTokenTtl: number;
  /** New device codes answer their first poll with slow_down. */
  slowDownFirstPoll: boolean;
  /** The next token requests are answered with these statuses (no OAuth error): an outage. */
  tokenOutage: number[];
  /** Refresh-token grants are answered this much later (a slow issuer). */
  refreshDelayMs: number;
  /** Refresh-token grants received so far (counted on arrival, before any delay). */
  refreshArrivals: number;
  readonly tokenRequests: TokenRequest[];
  /** The device code whose user code is `userCode` (throws when there is none). */
  code(userCode: string): DeviceCode;
  approve(userCode: string, sub: string): void;
  deny(userCode: string): void;
  expire(userCode: string): void;
  /** Every refresh token issued so far stops working (invalid_grant). */
  revokeRefreshTokens(): void;
  isLiveRefreshToken(token: string): boolean;
}

interface Grant {
  readonly sub: string;
  readonly scope: string;
}

const USER_CODE_LETTERS = 'BCDFGHJKLMNPQRSTVWXZ'; // RFC 8628 §6.1: no vowels, no look-alikes

function userCode(): string {
  const letter = (): string => USER_CODE_LETTERS[randomInt(USER_CODE_LETTERS.length)] ?? 'B';
  const four = (): string => Array.from({ length: 4 }, letter).join('');
  return `${four()}-${four()}`;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** A route whose handler reads the form body; a throw answers 500. */
function formRoute(handle: (form: URLSearchParams, res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    formOf(req).then(
      (form) => handle(form, res),
      () => send(res, 500, { error: 'server_error' }),
    );
  };
}

export async function startDeviceIssuer(options: { clientId?: string } = {}): Promise<DeviceIssuer> {
  const oidc = await startTestOidcIssuer();
  const clientId = options.clientId ?? 'sbx-cli';
  const codes = new Map<string, DeviceCode>(); // by device code
  const refreshTokens = new Map<string, Grant>();
  const tokenRequests: TokenRequest[] = [];

  const tokens = (issuer: DeviceIssuer, grant: Grant) => {
    const refreshToken = `rt_${randomBytes(24).toString('base64url')}`;
    refreshTokens.set(refreshToken, grant);
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: grant.sub, scope: grant.scope, client_id: clientId, jti: randomUUID() };
    return {
      access_token: oidc.sign({ ...claims, exp: now + issuer.accessTokenTtl }),
      token_type: 'Bearer',
      expires_in: issuer.accessTokenTtl,
      refresh_token: refreshToken,
      scope: grant.scope,
    };
  };

  const answer = (res: ServerResponse, grantType: string, status: number, body: Record<string, unknown>) => {
    const error = typeof body['error'] === 'string' ? body['error'] : undefined;
    tokenRequests.push({ grantType, at: Date.now(), status, error });
    send(res, status, body);
  };

  /** RFC 8628 §3.5, in the order a real issuer would check. */
  const pollDeviceCode = (issuer: DeviceIssuer, form: URLSearchParams): [number, Record<string, unknown>] => {
    const code = codes.get(form.get('device_code') ?? '');
    if (code === undefined || code.status === 'used') return [400, { error: 'invalid_grant' }];
    const now = Date.now();
    const previous = code.polls.at(-1);
    code.polls.push(now);
    if (now >= code.expiresAt) return [400, { error: 'expired_token' }];
    const tooSoon = previous !== undefined && now - previous < code.intervalSeconds * 1000 - 50;
    if (tooSoon || code.slowDownNextPoll) {
      code.slowDownNextPoll = false;
      code.intervalSeconds += 5;
      return [400, { error: 'slow_down' }];
    }
    if (code.status === 'denied') return [400, { error: 'access_denied' }];
    if (code.status === 'pending' || code.sub === undefined) return [400, { error: 'authorization_pending' }];
    code.status = 'used';
    return [200, tokens(issuer, { sub: code.sub, scope: code.scope })];
  };

  /** Refresh tokens rotate: the one presented is spent, a new one comes with the access token. */
  const refresh = (issuer: DeviceIssuer, form: URLSearchParams): [number, Record<string, unknown>] => {
    const presented = form.get('refresh_token') ?? '';
    const grant = refreshTokens.get(presented);
    if (grant === undefined)
      return [400, { error: 'invalid_grant', error_description: 'refresh token is not valid' }];
    refreshTokens.delete(presented);
    return [200, tokens(issuer, grant)];
  };

  const issuer: DeviceIssuer = {
    oidc,
    clientId,
    interval: 1,
    expiresIn: 60,
    accessTokenTtl: 300,
    slowDownFirstPoll: false,
    tokenOutage: [],
    refreshDelayMs: 0,
    refreshArrivals: 0,
    tokenRequests,
    code(user) {
      const found = [...codes.values()].find((c) => c.userCode === user);
      if (found === undefined) throw new Error(`no device code for user code ${user}`);
      return found;
    },
    approve(user, sub) {
      const code = issuer.code(user);
      code.status = 'approved';
      code.sub = sub;
    },
    deny: (user) => void (issuer.code(user).status = 'denied'),
    expire: (user) => void (issuer.code(user).expiresAt = Date.now()),
    revokeRefreshTokens: () => refreshTokens.clear(),
    isLiveRefreshToken: (token) => refreshTokens.has(token),
  };

  oidc.addRoute(
    'POST',
    '/device/code',
    formRoute((form, res) => {
      if (form.get('client_id') !== clientId) return send(res, 401, { error: 'invalid_client' });
      const code: DeviceCode = {
        userCode: userCode(),
        deviceCode: randomBytes(32).toString('base64url'),
        scope: form.get('scope') ?? '',
        status: 'pending',
        intervalSeconds: issuer.interval,
        expiresAt: Date.now() + issuer.expiresIn * 1000,
        polls: [],
        slowDownNextPoll: issuer.slowDownFirstPoll,
      };
      codes.set(code.deviceCode, code);
      send(res, 200, {
        device_code: code.deviceCode,
        user_code: code.userCode,
        verification_uri: `${oidc.issuer}/device`,
        verification_uri_complete: `${oidc.issuer}/device?user_code=${code.userCode}`,
        expires_in: issuer.expiresIn,
        interval: issuer.interval,
      });
    }),
  );
  oidc.addRoute(
    'POST',
    '/token',
    formRoute((form, res) => {
      const grantType = form.get('grant_type') ?? '';
      if (form.get('client_id') !== clientId) return answer(res, grantType, 401, { error: 'invalid_client' });
      const outage = issuer.tokenOutage.shift();
      if (outage !== undefined) return answer(res, grantType, outage, { detail: 'issuer unavailable' });
      if (grantType === 'urn:ietf:params:oauth:grant-type:device_code') {
        return answer(res, grantType, ...pollDeviceCode(issuer, form));
      }
      if (grantType === 'refresh_token') {
        issuer.refreshArrivals++;
        setTimeout(() => answer(res, grantType, ...refresh(issuer, form)), issuer.refreshDelayMs);
        return;
      }
      return answer(res, grantType, 400, { error: 'unsupported_grant_type' });
    }),
  );
  oidc.discoveryExtras['device_authorization_endpoint'] = `${oidc.issuer}/device/code`;
  oidc.discoveryExtras['token_endpoint'] = `${oidc.issuer}/token`;
  oidc.discoveryExtras['grant_types_supported'] = [
    'urn:ietf:params:oauth:grant-type:device_code',
    'refresh_token',
  ];
  return issuer;
}
