import { NotFoundError, type BrokerClient } from '@sbx/client';
import { loggedIn, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { isDeviceLogin, type OidcTokens } from '../store.js';

/** A session id that is never issued (ids are a prefix and 128 random bits). */
const PROBE_SESSION = 'ssn_sbx-cli-whoami-probe';

/**
 * Proves the key works. The broker has no identity route yet, so this asks for a session
 * that cannot exist: authentication runs first, so a bad key answers 401 (exit 3) and a
 * good one 404, which is the proof. It cannot name the principal behind the key.
 */
export async function probeKey(broker: BrokerClient): Promise<void> {
  try {
    await broker.inspect(PROBE_SESSION);
  } catch (err) {
    if (err instanceof NotFoundError) return;
    throw err;
  }
}

/**
 * Proves the login and says how it is made: an API key, or a device login at an issuer
 * (with the access token's expiry, read after the probe, which refreshes it when due).
 */
export async function whoami(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('whoami', args, { json: { type: 'boolean' } });
  const { config, broker } = loggedIn(ctx);
  await probeKey(broker);
  const stored = ctx.store.readConfig();
  const device =
    isDeviceLogin(config) && stored !== undefined && isDeviceLogin(stored) ? stored.oidc : undefined;
  const answer = {
    broker_url: config.broker_url,
    actor_id: config.actor_id,
    authenticated: true,
    ...(device === undefined ? {} : { device_login: deviceSummary(device) }),
  };
  if (values.json === true) printJson(ctx, answer);
  else ctx.stdout.write(`authenticated to ${config.broker_url} as ${config.actor_id}${deviceLine(device)}\n`);
  return EXIT.ok;
}

/** Never the tokens themselves. */
function deviceSummary(tokens: OidcTokens) {
  return {
    issuer: tokens.issuer,
    client_id: tokens.client_id,
    access_token_expires_at: tokens.expires_at ?? null,
    refreshable: tokens.refresh_token !== undefined,
  };
}

function deviceLine(tokens: OidcTokens | undefined): string {
  // The API-key line stays what scripts already read.
  if (tokens === undefined) return '';
  const expiry = tokens.expires_at === undefined ? 'no stated expiry' : `expires ${tokens.expires_at}`;
  const refresh = tokens.refresh_token === undefined ? ', no refresh token' : ', refreshed automatically';
  return `\n  device login at ${tokens.issuer} (client ${tokens.client_id}); access token ${expiry}${refresh}`;
}
