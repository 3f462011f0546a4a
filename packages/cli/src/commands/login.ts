import { userInfo } from 'node:os';
import { BrokerClient } from '@sbx/client';
import { ID_PATTERN } from '@sbx/protocol';
import { CLI_RETRY, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { probeKey } from './whoami.js';

const USAGE = 'login: sbx login --broker <url> --api-key <key> [--actor <id>] (or the key on stdin)';

/** Stores the broker URL and API key after checking the key against the broker. */
export async function login(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('login', args, {
    broker: { type: 'string' },
    'api-key': { type: 'string' },
    actor: { type: 'string' },
    json: { type: 'boolean' },
  });
  const brokerUrl = values.broker ?? ctx.store.readConfig()?.broker_url;
  if (brokerUrl === undefined || !URL.canParse(brokerUrl))
    throw new UsageError(`${USAGE}; --broker must be a URL`);
  const apiKey = values['api-key'] ?? (await keyFromStdin(ctx));
  const actorId = values.actor ?? defaultActorId();
  if (!ID_PATTERN.test(actorId))
    throw new UsageError(`login: --actor may contain only letters, digits and _ - . : @`);
  await probeKey(new BrokerClient({ baseUrl: brokerUrl, apiKey, retry: CLI_RETRY }));
  ctx.store.writeConfig({ broker_url: brokerUrl, api_key: apiKey, actor_id: actorId });
  if (values.json === true)
    printJson(ctx, { broker_url: brokerUrl, actor_id: actorId, config: ctx.store.configPath });
  else ctx.stdout.write(`logged in to ${brokerUrl} as ${actorId} (saved in ${ctx.store.configPath})\n`);
  return EXIT.ok;
}

/** `echo $KEY | sbx login --broker …` keeps the key out of the shell history and `ps`. */
async function keyFromStdin(ctx: CliContext): Promise<string> {
  if (ctx.stdin.isTTY) {
    throw new UsageError(
      `login: the device-code flow is not implemented yet; pass --api-key <key> or pipe the key on stdin`,
    );
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
