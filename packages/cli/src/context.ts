import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SbxError } from '@sbx/protocol';
import { BrokerClient, type RetryPolicy } from '@sbx/client';
import type { CliEnv } from './cli-config.js';
import { UsageError } from './exit-codes.js';
import { deviceLoginBearer } from './oauth/stored-login.js';
import { isDeviceLogin, type ApiKeyConfig, type CliConfig, type CliStore } from './store.js';

/** What every command gets: where its files are, how to print, and the environment read once. */
export interface CliContext {
  readonly env: CliEnv;
  readonly store: CliStore;
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
  readonly stdin: NodeJS.ReadStream;
}

/** A CLI call gives up sooner than a long-running SDK user would: a person is waiting. */
export const CLI_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 2_000 };

export interface LoggedIn {
  readonly config: CliConfig;
  readonly broker: BrokerClient;
}

/**
 * The login (config.json, overridden per variable by SBX_BROKER_URL / SBX_API_KEY). A
 * device login's broker client asks for its bearer at every request, so the access token
 * is refreshed whenever it nears expiry, in a one-shot command or a long `sbx shell`.
 */
export function loggedIn(ctx: CliContext): LoggedIn {
  const stored = ctx.store.readConfig();
  const brokerUrl = ctx.env.brokerUrl ?? stored?.broker_url;
  const actorId = stored?.actor_id ?? 'cli';
  if (brokerUrl !== undefined && ctx.env.apiKey !== undefined) {
    return withApiKey({ broker_url: brokerUrl, api_key: ctx.env.apiKey, actor_id: actorId });
  }
  if (brokerUrl === undefined || stored === undefined) {
    throw new SbxError(
      'UNAUTHENTICATED',
      'not logged in: run sbx login --broker <url> (--api-key <key> | --device --issuer <url>)',
    );
  }
  if (!isDeviceLogin(stored)) return withApiKey({ ...stored, broker_url: brokerUrl });
  const bearer = deviceLoginBearer(ctx.store);
  return {
    config: { ...stored, broker_url: brokerUrl },
    broker: new BrokerClient({ baseUrl: brokerUrl, bearer, retry: CLI_RETRY }),
  };
}

function withApiKey(config: ApiKeyConfig): LoggedIn {
  const broker = new BrokerClient({ baseUrl: config.broker_url, apiKey: config.api_key, retry: CLI_RETRY });
  return { config, broker };
}

/** `node:util` parseArgs in strict mode, its complaints turned into usage errors (exit 2). */
export function parseCommand<T extends NonNullable<ParseArgsConfig['options']>>(
  command: string,
  args: readonly string[],
  options: T,
) {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${command}: ${parserComplaint(err)} (sbx help)`);
  }
}

/** parseArgs' message in a person's words: `unknown option -r`, not how to pass it as a positional. */
function parserComplaint(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const unknown = /^Unknown option '([^']+)'/.exec(message)?.[1];
  return unknown === undefined ? message : `unknown option ${unknown}`;
}

/** The one positional a command takes, or a usage error naming it. */
export function positional(
  command: string,
  positionals: readonly string[],
  index: number,
  name: string,
): string {
  const value = positionals[index];
  if (value === undefined || value === '') throw new UsageError(`${command}: missing <${name}> (sbx help)`);
  return value;
}

export function printJson(ctx: CliContext, value: unknown): void {
  ctx.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
