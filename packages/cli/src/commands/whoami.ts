import { NotFoundError, type BrokerClient } from '@sbx/client';
import { loggedIn, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';

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

export async function whoami(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('whoami', args, { json: { type: 'boolean' } });
  const { config, broker } = loggedIn(ctx);
  await probeKey(broker);
  const answer = { broker_url: config.broker_url, actor_id: config.actor_id, authenticated: true };
  if (values.json === true) printJson(ctx, answer);
  else ctx.stdout.write(`authenticated to ${config.broker_url} as ${config.actor_id}\n`);
  return EXIT.ok;
}
