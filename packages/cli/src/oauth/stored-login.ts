import { SbxError } from '@sbx/protocol';
import { UnauthenticatedError } from '@sbx/client';
import { isDeviceLogin, type CliStore, type DeviceLoginConfig, type OidcTokens } from '../store.js';
import { isRecord } from './issuer-http.js';
import { OAuthError, requestToken, type TokenResponse } from './token-endpoint.js';

/** An access token this close to its expiry is refreshed before it is sent. */
export const REFRESH_MARGIN_MS = 60_000;

export interface TokenOrigin {
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly clientId: string;
}

/**
 * What config.json keeps of a token response. A response without a refresh token keeps
 * the previous one (RFC 6749 §6: the issuer may or may not rotate it).
 */
export function storedTokens(
  origin: TokenOrigin,
  response: TokenResponse,
  previous?: OidcTokens,
  now = Date.now(),
): OidcTokens {
  const expiresAtMs =
    response.expires_in === undefined ? jwtExpiryMs(response.access_token) : now + response.expires_in * 1000;
  const refreshToken = response.refresh_token ?? previous?.refresh_token;
  const scope = response.scope ?? previous?.scope;
  return {
    issuer: origin.issuer,
    token_endpoint: origin.tokenEndpoint,
    client_id: origin.clientId,
    access_token: response.access_token,
    ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }),
    ...(expiresAtMs === undefined ? {} : { expires_at: new Date(expiresAtMs).toISOString() }),
    ...(scope === undefined ? {} : { scope }),
  };
}

/**
 * The bearer of a device login, for BrokerClient: the stored access token, or, within
 * REFRESH_MARGIN_MS of its expiry, a new one from the refresh-token grant, stored before
 * it is used. config.json is read at every call, so a token another `sbx` process has
 * refreshed meanwhile is taken instead of spending (and, with rotation, burning) ours.
 * One refresh at a time per process.
 */
export function deviceLoginBearer(store: CliStore): () => Promise<string> {
  let inFlight: Promise<string> | undefined;
  return () => {
    const tokens = currentLogin(store).oidc;
    if (!isDue(tokens, Date.now())) return Promise.resolve(tokens.access_token);
    inFlight ??= refreshStoredLogin(store).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}

async function refreshStoredLogin(store: CliStore): Promise<string> {
  const login = currentLogin(store);
  const tokens = login.oidc;
  if (!isDue(tokens, Date.now())) return tokens.access_token;
  if (tokens.refresh_token === undefined) {
    if (isExpired(tokens, Date.now()))
      throw loginExpired('the access token expired and there is no refresh token');
    return tokens.access_token;
  }
  let response: TokenResponse;
  try {
    response = await requestToken(
      tokens.token_endpoint,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: tokens.client_id },
      'refresh the login',
    );
  } catch (err) {
    // The issuer is down but the token still works: use it; the next call tries again.
    if (isUnreachable(err) && !isExpired(tokens, Date.now())) return tokens.access_token;
    if (!(err instanceof OAuthError && err.error === 'invalid_grant')) throw err;
    // Another process may have rotated the refresh token a moment ago: use what it stored.
    const latest = currentLogin(store).oidc;
    if (latest.refresh_token !== tokens.refresh_token && !isDue(latest, Date.now()))
      return latest.access_token;
    throw loginExpired('the issuer refused the refresh token');
  }
  const origin = { issuer: tokens.issuer, tokenEndpoint: tokens.token_endpoint, clientId: tokens.client_id };
  store.writeConfig({ ...login, oidc: storedTokens(origin, response, tokens) });
  return response.access_token;
}

const isUnreachable = (err: unknown): boolean =>
  err instanceof SbxError && (err.code === 'BACKEND_UNAVAILABLE' || err.code === 'TIMEOUT');

function currentLogin(store: CliStore): DeviceLoginConfig {
  const config = store.readConfig();
  if (config === undefined || !isDeviceLogin(config)) {
    throw new UnauthenticatedError(
      'UNAUTHENTICATED',
      'not logged in any more (sbx logout ran?): run sbx login',
    );
  }
  return config;
}

/** A SecurityError, so the SDK never retries the broker call it was meant for. */
function loginExpired(why: string): UnauthenticatedError {
  return new UnauthenticatedError('UNAUTHENTICATED', `login expired: run sbx login --device (${why})`);
}

const expiresAtMs = (tokens: OidcTokens): number | undefined =>
  tokens.expires_at === undefined ? undefined : Date.parse(tokens.expires_at);

function isDue(tokens: OidcTokens, now: number): boolean {
  const expires = expiresAtMs(tokens);
  return expires !== undefined && expires - REFRESH_MARGIN_MS <= now;
}

function isExpired(tokens: OidcTokens, now: number): boolean {
  const expires = expiresAtMs(tokens);
  return expires !== undefined && expires <= now;
}

/**
 * The claims of a JWT access token, read without verifying it: only for what the CLI
 * shows or defaults (its expiry when the issuer sent no expires_in, the actor id). The
 * broker verifies every token; an opaque token just yields undefined.
 */
export function unverifiedClaims(token: string): Record<string, unknown> | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return isRecord(claims) ? claims : undefined;
  } catch {
    return undefined;
  }
}

function jwtExpiryMs(token: string): number | undefined {
  const exp = unverifiedClaims(token)?.['exp'];
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}
