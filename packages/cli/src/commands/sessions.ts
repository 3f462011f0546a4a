import { parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { BINDING_ROLES, type CachedThread } from '../store.js';
import { formatTable } from '../table.js';

/** What `ensure` and `sessions` show of a cached thread: never its tokens. */
export function threadSummary(thread: string, entry: CachedThread) {
  const bindings = BINDING_ROLES.flatMap((role) => {
    const binding = entry.bindings[role];
    return binding === undefined
      ? []
      : [{ role, session_id: binding.session_id, expires_at: binding.expires_at }];
  });
  return {
    thread,
    sandbox_id: entry.sandbox_id,
    http_base_url: entry.http_base_url,
    ws_base_url: entry.ws_base_url,
    ...(entry.workspace_path === undefined ? {} : { workspace_path: entry.workspace_path }),
    bindings,
  };
}

/** The threads this machine has cached (no broker call: what `sbx release` would release). */
export function sessions(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('sessions', args, { json: { type: 'boolean' } });
  const threads = Object.entries(ctx.store.readThreads()).toSorted(([a], [b]) => a.localeCompare(b));
  const summaries = threads.map(([thread, entry]) => threadSummary(thread, entry));
  if (values.json === true) {
    printJson(ctx, summaries);
    return Promise.resolve(EXIT.ok);
  }
  if (summaries.length === 0) {
    ctx.stdout.write('no cached threads (sbx ensure <thread>)\n');
    return Promise.resolve(EXIT.ok);
  }
  const rows = summaries.flatMap((s) =>
    s.bindings.map((b) => [s.thread, s.sandbox_id, b.role, b.session_id, b.expires_at]),
  );
  ctx.stdout.write(formatTable(['THREAD', 'SANDBOX', 'ROLE', 'SESSION', 'TOKEN EXPIRES'], rows));
  return Promise.resolve(EXIT.ok);
}
