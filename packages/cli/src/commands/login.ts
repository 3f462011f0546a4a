import { userInfo } from 'node:os';
import { BrokerClient, clientError, SbxClientError } from '@sbx/client';
import { ID_PATTERN, type WhoamiResponse } from '@sbx/protocol';
import { withConfigLock } from '../config-lock.js';
import { CLI_RETRY, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { deviceLogin } from '../oauth/device-login.js';
import { insecureUrlProblem } from '../oauth/issuer-http.js';
import { isDeviceLogin, type CliConfig } from '../store.js';
import { callerLine, identify } from './whoami.js';

const USAGE =
  'login: sbx login --broker <url> (--api-key <key> | --device --issuer <url> [--client-id <id>] ' +
  '[--scope <scopes>] [--audience <aud>]) [--actor <id>]';
/** The OAuth client the issuer knows the CLI as, unless told otherwise. */
export const DEFAULT_CLIENT_ID = 'sbx-cli';
/** Every caller scope but admin (the broker ignores the rest), and a refresh token (offline_access). */
export const DEFAULT_SCOPE = 'openid offline_access read:sandbox write:sandbox exec:sandbox attach:sandbox';

const OPTIONS = {
  broker: { type: 'string' },
  'api-key': { type: 'string' },
  actor: { type: 'string' },
  device: { type: 'boolean' },
  issuer: { type: 'string' },
  'client-id': { type: 'string' },
  scope: { type: 'string' },
  audience: { type: 'string' },
  json: { type: 'boolean' },
} as const;

type LoginValues = ReturnType<typeof parseCommand<typeof OPTIONS>>['values'];

/**
 * Stores the broker URL and a credential after proving it against the broker: an API key
 * (`--api-key` or stdin), or an OIDC login by the device authorization grant (`--device`).
 */
export async function login(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('login', args, OPTIONS);
  const stored = ctx.store.readConfig();
  const brokerUrl = values.broker ?? stored?.broker_url;
  if (brokerUrl === undefined || !URL.canParse(brokerUrl))
    throw new UsageError(`${USAGE}; --broker must be a URL`);
  if (values.actor !== undefined && !ID_PATTERN.test(values.actor))
    throw new UsageError(`login: --actor may contain only letters, digits and _ - . : @`);
  const { config, caller } =
    values.device === true
      ? { config: await loginWithDevice(ctx, values, brokerUrl, stored), caller: undefined }
      : await loginWithKey(ctx, values, brokerUrl);
  // Under the login lock, as a refresh in another sbx writes (oauth/stored-login.ts).
  await withConfigLock(ctx.store.home, () => Promise.resolve(ctx.store.writeConfig(config)));
  report(ctx, config, caller, values.json === true);
  return EXIT.ok;
}

async function loginWithKey(
  ctx: CliContext,
  values: LoginValues,
  brokerUrl: string,
): Promise<{ config: CliConfig; caller: WhoamiResponse | undefined }> {
  const deviceOnly = (['issuer', 'client-id', 'scope', 'audience'] as const).find(
    (f) => values[f] !== undefined,
  );
  if (deviceOnly !== undefined) throw new UsageError(`login: --${deviceOnly} goes with --device (${USAGE})`);
  const apiKey = values['api-key'] ?? (await keyFromStdin(ctx));
  let caller: WhoamiResponse | undefined;
  try {
    caller = await identify(new BrokerClient({ baseUrl: brokerUrl, apiKey, retry: CLI_RETRY }));
  } catch (err) {
    throw whileLoggingIn(brokerUrl, err);
  }
  // A user key acts as the human it is (the broker lets it act as no other): its principal.
  const own = caller?.principal_type === 'user' ? caller.principal_id : undefined;
  const config = {
    broker_url: brokerUrl,
    api_key: apiKey,
    actor_id: values.actor ?? own ?? defaultActorId(),
  };
  return { config, caller };
}

/**
 * The broker's refusal as what it refused: logging in, not the request the CLI made to
 * find out (`inspect session: API key is not valid`). Same code, so the same exit code;
 * failures to reach the broker keep their own words.
 */
function whileLoggingIn(brokerUrl: string, err: unknown): Error {
  if (!(err instanceof SbxClientError) || err.httpStatus === undefined)
    return err instanceof Error ? err : new Error(String(err));
  const reason = err.message.replace(/^(?:whoami|inspect session): /, '');
  return clientError(err.code, `logging in to ${brokerUrl}: ${reason}`, {
    httpStatus: err.httpStatus,
    ...(err.details === undefined ? {} : { details: err.details }),
  });
}

/** The issuer and client default to the previous device login's, so `sbx login --device` logs in again. */
async function loginWithDevice(
  ctx: CliContext,
  values: LoginValues,
  brokerUrl: string,
  stored: CliConfig | undefined,
): Promise<CliConfig> {
  if (values['api-key'] !== undefined) throw new UsageError(`login: --api-key or --device, not both`);
  const previous = stored !== undefined && isDeviceLogin(stored) ? stored.oidc : undefined;
  const issuer = values.issuer ?? previous?.issuer;
  if (issuer === undefined) throw new UsageError(`login: --device needs --issuer <url> (${USAGE})`);
  const problem = insecureUrlProblem(issuer);
  if (problem !== undefined) throw new UsageError(`login: --issuer ${problem}`);
  const sameIssuer = previous?.issuer === issuer ? previous : undefined;
  return deviceLogin(ctx, {
    brokerUrl,
    issuer,
    clientId: values['client-id'] ?? sameIssuer?.client_id ?? DEFAULT_CLIENT_ID,
    scope: values.scope ?? DEFAULT_SCOPE,
    ...(values.audience === undefined ? {} : { audience: values.audience }),
    ...(values.actor === undefined ? {} : { actor: values.actor }),
    fallbackActor: defaultActorId(),
  });
}

function report(ctx: CliContext, config: CliConfig, caller: WhoamiResponse | undefined, json: boolean): void {
  const device = isDeviceLogin(config) ? config.oidc : undefined;
  if (json) {
    printJson(ctx, {
      broker_url: config.broker_url,
      ...(caller === undefined ? {} : { principal: caller }),
      actor_id: config.actor_id,
      config: ctx.store.configPath,
      ...(device === undefined ? {} : { issuer: device.issuer, access_token_expires_at: device.expires_at }),
    });
    return;
  }
  const how = device === undefined ? '' : ` with a device login at ${device.issuer}`;
  const who =
    caller === undefined ? config.actor_id : `${callerLine(caller)}; bindings act as ${config.actor_id}`;
  ctx.stdout.write(`logged in to ${config.broker_url} as ${who}${how} (saved in ${ctx.store.configPath})\n`);
}

/** `echo $KEY | sbx login --broker …` keeps the key out of the shell history and `ps`. */
async function keyFromStdin(ctx: CliContext): Promise<string> {
  if (ctx.stdin.isTTY) {
    throw new UsageError(`${USAGE}: pass --api-key <key>, pipe the key on stdin, or use --device`);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.stdin)
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  const key = Buffer.concat(chunks).toString('utf8').trim();
  if (key === '') throw new UsageError(`${USAGE}; no key on stdin`);
  return key;
}

function defaultActorId(): string {
  const name = userInfo().username.replace(/[^A-Za-z0-9_\-.:@]/g, '_');
  return name === '' ? 'cli' : `usr:${name}`;
}
