import { loggedIn, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { requireRemotePath } from '../remote-path.js';
import { ThreadSessions } from '../thread-sessions.js';

/**
 * Removes a sandbox file, or a directory with `-r`: wherever the sandbox's user may (`t1:/tmp/x`);
 * a read-only place is refused (403, exit 3).
 */
export async function rm(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommand('rm', args, {
    recursive: { type: 'boolean', short: 'r' },
    json: { type: 'boolean' },
  });
  const remote = requireRemotePath('rm', positionals[0]);
  const { config, broker } = loggedIn(ctx);
  const sandbox = await new ThreadSessions(broker, ctx.store, config.actor_id).sandbox(
    remote.thread,
    'human',
  );
  await sandbox.files.remove(remote.path, { recursive: values.recursive === true });
  if (values.json === true) printJson(ctx, { removed: remote.path, thread: remote.thread });
  return EXIT.ok;
}
