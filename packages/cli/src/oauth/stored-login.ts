import { SbxError } from '@sbx/protocol';
import { UnauthenticatedError } from '@sbx/client';
import { withConfigLock } from '../config-lock.js';
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
 * refreshed is taken instead of spending ours. Refreshing holds `config.lock`, so
 * processes due at once spend the (rotating) refresh token once: the others wait, then
 * find and use the token the first stored. One refresh at a time per process.
 */
export function deviceLoginBearer(store: CliStore): () => Promise<string> {
  let inFlight: Promise<string> | undefined;
  return () => {
    const seen = currentLogin(store).oidc;
    if (!isDue(seen, Date.now())) return Promise.resolve(seen.access_token);
    inFlight ??= withConfigLock(store.home, () => refreshStoredLogin(store, seen)).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}

/** Under the lock: `seen` is the login as it was before waiting for it. */
async function refreshStoredLogin(store: CliStore, seen: OidcTokens): Promise<string> {
  const tokens = currentLogin(store).oidc;
  const now = Date.now();
  // Another process refreshed while this one waited: its token, even one due soon
  // (an issuer may grant tokens shorter-lived than the margin).
  if (tokens.access_token !== seen.access_token && !isExpired(tokens, now)) return tokens.access_token;
  if (!isDue(tokens, now)) return tokens.access_token;
  if (tokens.refresh_token === undefined) {
    if (isExpired(tokens, now)) throw loginExpired('the access token expired and there is no refresh token');
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
    // A process that took no lock (an older sbx) may have rotated it a moment ago: use what it stored.
    const latest = currentLogin(store).oidc;
    if (latest.refresh_token !== tokens.refresh_token && !isExpired(latest, Date.now()))
      return latest.access_token;
    throw loginExpired('the issuer refused the refresh token');
  }
  const origin = { issuer: tokens.issuer, tokenEndpoint: tokens.token_endpoint, clientId: tokens.client_id };
  saveUnlessReplaced(store, tokens, storedTokens(origin, response, tokens));
  return response.access_token;
}

/**
 * Stores the refreshed tokens unless the login changed during the round trip (a logout, a
 * new login): that is the user's latest word, and the new token then serves this command only.
 */
function saveUnlessReplaced(store: CliStore, refreshed: OidcTokens, renewed: OidcTokens): void {
  const latest = store.readConfig();
  if (latest === undefined || !isDeviceLogin(latest)) return;
  const same =
    latest.oidc.refresh_token === refreshed.refresh_token && latest.oidc.issuer === refreshed.issuer;
  if (same) store.writeConfig({ ...latest, oidc: renewed });
}

const isUnreachable = (err: unknown): boolean =>
  err instanceof SbxError && (err.code === 'BACKEND_UNAVAILABLE' || err.code === 'TIMEOUT');

function currentLogin(store: CliStore): DeviceLoginConfig {
  const config = store.readConfig();
  if (config === undefined || !isDeviceLogin(config)) {
    throw new UnauthenticatedError('not logged in any more (sbx logout ran?): run sbx login');
  }
  return config;
}

/** A SecurityError, so the SDK never retries the broker call it was meant for. */
function loginExpired(why: string): UnauthenticatedError {
  return new UnauthenticatedError(`login expired: run sbx login --device (${why})`);
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
