import type { WhoamiResponse } from '@sbx/protocol';
import { NotFoundError, type BrokerClient } from '@sbx/client';
import { loggedIn, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { isDeviceLogin, type OidcTokens } from '../store.js';

/** A session id that is never issued (ids are a prefix and 128 random bits). */
const PROBE_SESSION = 'ssn_sbx-cli-whoami-probe';

/**
 * Who the broker says the credential is (`GET /v1/whoami`); a bad one is 401 (exit 3).
 * A broker older than that route answers it 404 before authenticating: the credential is
 * then proven by asking for a session that cannot exist (401 for a bad one, 404 for a
 * good one), and the caller stays unnamed (undefined).
 */
export async function identify(broker: BrokerClient): Promise<WhoamiResponse | undefined> {
  try {
    return await broker.whoami();
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
  try {
    await broker.inspect(PROBE_SESSION);
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
  return undefined;
}

/** Proves the credential works (doctor, device login). */
export async function probeKey(broker: BrokerClient): Promise<void> {
  await identify(broker);
}

/** `usr_1 (user, tenant acme)`: the principal as the broker names it. */
export function callerLine(caller: WhoamiResponse): string {
  return `${caller.principal_id} (${caller.principal_type}, tenant ${caller.tenant_id})`;
}

/**
 * Says who the broker takes the login for (the principal behind the key or token, not a
 * name of this machine's) and how the login is made: an API key, or a device login at an
 * issuer (with the access token's expiry, read after the call, which refreshes it when due).
 * `actor_id` is the name this CLI's bindings act under (`sbx login --actor`).
 */
export async function whoami(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('whoami', args, { json: { type: 'boolean' } });
  const { config, broker } = loggedIn(ctx);
  const caller = await identify(broker);
  const stored = ctx.store.readConfig();
  const device =
    isDeviceLogin(config) && stored !== undefined && isDeviceLogin(stored) ? stored.oidc : undefined;
  const answer = {
    broker_url: config.broker_url,
    principal: caller ?? null,
    actor_id: config.actor_id,
    authenticated: true,
    ...(device === undefined ? {} : { device_login: deviceSummary(device) }),
  };
  if (values.json === true) printJson(ctx, answer);
  else {
    const who =
      caller === undefined
        ? `${config.actor_id} (the broker does not say whose the key is)`
        : `${callerLine(caller)}; bindings act as ${config.actor_id}`;
    ctx.stdout.write(`authenticated to ${config.broker_url} as ${who}${deviceLine(device)}\n`);
  }
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
  if (tokens === undefined) return '';
  const expiry = tokens.expires_at === undefined ? 'no stated expiry' : `expires ${tokens.expires_at}`;
  const refresh = tokens.refresh_token === undefined ? ', no refresh token' : ', refreshed automatically';
  return `\n  device login at ${tokens.issuer} (client ${tokens.client_id}); access token ${expiry}${refresh}`;
}
