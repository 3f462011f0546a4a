import { loggedIn, parseCommand, positional, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { ThreadSessions } from '../thread-sessions.js';

/** Releases this CLI's bindings; when they were the sandbox's last, the broker destroys it. */
export async function release(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommand('release', args, { json: { type: 'boolean' } });
  const thread = positional('release', positionals, 0, 'thread');
  const { config, broker } = loggedIn(ctx);
  const released = await new ThreadSessions(broker, ctx.store, config.actor_id).release(thread);
  if (values.json === true) printJson(ctx, { thread, released_sessions: released });
  else ctx.stdout.write(`released ${released.length} session(s) of thread ${thread}\n`);
  return EXIT.ok;
}
