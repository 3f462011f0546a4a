import { loggedIn, parseCommand, positional, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { ThreadSessions } from '../thread-sessions.js';
import { endedSandbox } from '../sandbox-ending.js';

/**
 * Releases this CLI's bindings; when they were the sandbox's last, the broker destroys it.
 * A thread whose sandbox is gone already has nothing to release: exit 0 all the same.
 */
export async function release(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommand('release', args, { json: { type: 'boolean' } });
  const thread = positional('release', positionals, 0, 'thread');
  const { config, broker } = loggedIn(ctx);
  // A cached sandbox that ended has nothing left to release (its end released every binding).
  const ended = await endedSandbox(broker, ctx.store, thread, 1);
  const released =
    ended === undefined ? await new ThreadSessions(broker, ctx.store, config.actor_id).release(thread) : [];
  if (values.json === true) printJson(ctx, { thread, released_sessions: released });
  else if (released.length === 0) ctx.stdout.write(`nothing to release: thread ${thread} has no sandbox\n`);
  else ctx.stdout.write(`released ${released.length} session(s) of thread ${thread}\n`);
  return EXIT.ok;
}
