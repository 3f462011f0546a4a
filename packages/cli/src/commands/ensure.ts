import { loggedIn, parseCommand, positional, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { ThreadSessions } from '../thread-sessions.js';
import { threadSummary } from './sessions.js';

/** Attaches to (or creates) the thread's sandbox and caches its bindings. */
export async function ensure(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommand('ensure', args, { json: { type: 'boolean' } });
  const thread = positional('ensure', positionals, 0, 'thread');
  const { config, broker } = loggedIn(ctx);
  const entry = await new ThreadSessions(broker, ctx.store, config.actor_id).ensure(thread);
  const summary = threadSummary(thread, entry);
  if (values.json === true) printJson(ctx, summary);
  else {
    const workspace = entry.workspace_path === undefined ? '' : `, workspace ${entry.workspace_path}`;
    ctx.stdout.write(`thread ${thread}: sandbox ${entry.sandbox_id} at ${entry.http_base_url}${workspace}\n`);
  }
  return EXIT.ok;
}
