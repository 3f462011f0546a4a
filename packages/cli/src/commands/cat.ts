import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { loggedIn, parseCommand, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { requireRemotePath } from '../remote-path.js';
import { ThreadSessions } from '../thread-sessions.js';

/** Streams a sandbox file to stdout, bytes as they are (any the sandbox may read: `t1:/etc/os-release`). */
export async function cat(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { positionals } = parseCommand('cat', args, {});
  const remote = requireRemotePath('cat', positionals[0]);
  const { config, broker } = loggedIn(ctx);
  const sandbox = await new ThreadSessions(broker, ctx.store, config.actor_id).sandbox(
    remote.thread,
    'human',
  );
  const stream = await sandbox.files.readStream(remote.path);
  await pipeline(Readable.fromWeb(stream), ctx.stdout, { end: false });
  return EXIT.ok;
}
