import { BrokerClient, UnauthenticatedError } from '@sbx/client';
import { Id, ID_MAX_LENGTH, SbxError } from '@sbx/protocol';
import { probeKey } from '../commands/whoami.js';
import { CLI_RETRY, type CliContext } from '../context.js';
import type { DeviceLoginConfig } from '../store.js';
import { pollForToken, startDeviceAuthorization, type DeviceAuthorization } from './device-flow.js';
import { discoverIssuer } from './discovery.js';
import { storedTokens, unverifiedClaims } from './stored-login.js';

export interface DeviceLoginOptions {
  readonly brokerUrl: string;
  readonly issuer: string;
  readonly clientId: string;
  readonly scope: string;
  readonly audience?: string;
  /** `--actor`; default the token's `sub` (what the broker calls a user), else `fallbackActor`. */
  readonly actor?: string;
  readonly fallbackActor: string;
}

/**
 * The device authorization grant (RFC 8628) against the issuer's discovered endpoints:
 * shows the user code on stderr, polls until approved, then proves the access token
 * against the broker. Returns the login to store; nothing is written on any failure.
 */
export async function deviceLogin(ctx: CliContext, options: DeviceLoginOptions): Promise<DeviceLoginConfig> {
  const endpoints = await discoverIssuer(options.issuer);
  const authorization = await startDeviceAuthorization(endpoints.deviceAuthorizationEndpoint, {
    clientId: options.clientId,
    scope: options.scope,
    ...(options.audience === undefined ? {} : { audience: options.audience }),
  });
  printInstructions(ctx, authorization);
  const response = await pollForToken(endpoints.tokenEndpoint, options.clientId, authorization);
  await proveToken(options.brokerUrl, response.access_token);
  const origin = {
    issuer: endpoints.issuer,
    tokenEndpoint: endpoints.tokenEndpoint,
    clientId: options.clientId,
  };
  return {
    broker_url: options.brokerUrl,
    actor_id: options.actor ?? actorOf(response.access_token) ?? options.fallbackActor,
    oidc: storedTokens(origin, response),
  };
}

function printInstructions(ctx: CliContext, authorization: DeviceAuthorization): void {
  const uri = printable(authorization.verification_uri);
  const code = printable(authorization.user_code);
  const lines = [`To log in, open ${uri} and enter the code: ${code}`];
  if (authorization.verification_uri_complete !== undefined) {
    lines.push(
      `  (or open ${printable(authorization.verification_uri_complete)} which has the code filled in)`,
    );
  }
  const minutes = Math.max(1, Math.round(authorization.expires_in / 60));
  lines.push(`Waiting for approval (the code expires in ${minutes} min; Ctrl-C gives up)…`);
  ctx.stderr.write(`${lines.join('\n')}\n`);
}

/** Like the API-key login's probe: a token the broker refuses is not worth saving. */
async function proveToken(brokerUrl: string, accessToken: string): Promise<void> {
  try {
    await probeKey(new BrokerClient({ baseUrl: brokerUrl, bearer: () => accessToken, retry: CLI_RETRY }));
  } catch (err) {
    if (!(err instanceof UnauthenticatedError)) throw err;
    throw new SbxError(
      'UNAUTHENTICATED',
      `the broker refused the issuer's access token (${err.message}); nothing was saved. ` +
        `Does its OIDC_ISSUER / OIDC_AUDIENCE match? (sbx login --device --audience <aud>)`,
    );
  }
}

/** The token's `sub`, when it is a JWT with one the broker would accept as an id (suffixes included). */
function actorOf(accessToken: string): string | undefined {
  const sub = unverifiedClaims(accessToken)?.['sub'];
  const fits = typeof sub === 'string' && sub.length + '.observer'.length <= ID_MAX_LENGTH;
  return fits && Id.safeParse(sub).success ? sub : undefined;
}

/** What the issuer sends is shown on a terminal: no control characters (escape sequences). */
function printable(text: string): string {
  // oxlint-disable-next-line no-control-regex -- removing them is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
}
