import { loggedIn, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { printable } from '../printable.js';
import { parseRemotePath, requireRemotePath, WORKSPACE } from '../remote-path.js';
import { formatTable } from '../table.js';
import { ThreadSessions } from '../thread-sessions.js';

/**
 * Lists a sandbox directory: any the sandbox's user may read (`t1:/tmp`); `<thread>:` alone,
 * or `<thread>`, is the workspace itself.
 */
export async function ls(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommand('ls', args, { json: { type: 'boolean' } });
  const first = positionals[0];
  // `sbx ls t1` reads naturally as t1's workspace.
  const remote =
    first !== undefined && parseRemotePath(first) === undefined
      ? { thread: first, path: WORKSPACE }
      : requireRemotePath('ls', first);
  const { config, broker } = loggedIn(ctx);
  const sandbox = await new ThreadSessions(broker, ctx.store, config.actor_id).sandbox(
    remote.thread,
    'human',
  );
  const listing = await sandbox.files.list(remote.path);
  const entries = listing.entries.toSorted((a, b) => a.name.localeCompare(b.name));
  if (values.json === true) {
    printJson(ctx, { ...listing, entries });
    return EXIT.ok;
  }
  const rows = entries.map((e) => [
    e.mode,
    e.type,
    String(e.size),
    e.mtime,
    // Names come from the sandbox: control characters could drive the terminal.
    printable(e.type === 'dir' ? `${e.name}/` : e.name),
  ]);
  ctx.stdout.write(formatTable(['MODE', 'TYPE', 'SIZE', 'MODIFIED', 'NAME'], rows));
  return EXIT.ok;
}
