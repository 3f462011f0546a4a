import { SbxError } from '@sbx/protocol';
import type { BrokerClient } from '@sbx/client';
import { loggedIn, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { BINDING_ROLES, type CachedThread } from '../store.js';
import { isGone } from '../staleness.js';
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

/** How long `sbx sessions` waits for the broker to say which bindings still hold. */
const CHECK_TIMEOUT_MS = 5_000;

/**
 * The threads this machine has cached (what `sbx release` would release). Bindings the broker
 * says are over (released elsewhere, or their sandbox ended) are dropped from the cache and
 * the listing, each dropped thread told on stderr; without a login, or with the broker
 * unreachable, the cache is listed as it is.
 */
export async function sessions(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values } = parseCommand('sessions', args, { json: { type: 'boolean' } });
  for (const { thread, sandboxEnded } of await dropEnded(ctx)) {
    const why = sandboxEnded ? 'its sandbox ended' : 'its sessions were released elsewhere';
    ctx.stderr.write(`sbx: dropped thread ${thread}: ${why} (sbx ensure ${thread} starts a new one)\n`);
  }
  const threads = Object.entries(ctx.store.readThreads()).toSorted(([a], [b]) => a.localeCompare(b));
  const summaries = threads.map(([thread, entry]) => threadSummary(thread, entry));
  if (values.json === true) {
    printJson(ctx, summaries);
    return EXIT.ok;
  }
  if (summaries.length === 0) {
    ctx.stdout.write('no cached threads (sbx ensure <thread>)\n');
    return EXIT.ok;
  }
  const rows = summaries.flatMap((s) =>
    s.bindings.map((b) => [s.thread, s.sandbox_id, b.role, b.session_id, b.expires_at]),
  );
  ctx.stdout.write(formatTable(['THREAD', 'SANDBOX', 'ROLE', 'SESSION', 'TOKEN EXPIRES'], rows));
  return EXIT.ok;
}

interface Dropped {
  readonly thread: string;
  /** The broker said the sandbox ended (not only that these bindings were released). */
  readonly sandboxEnded: boolean;
}

/** Asks the broker about every cached binding; drops those it says are over. The threads left with none. */
async function dropEnded(ctx: CliContext): Promise<Dropped[]> {
  const cached = ctx.store.readThreads();
  if (Object.keys(cached).length === 0) return [];
  let broker: BrokerClient;
  try {
    broker = loggedIn(ctx).broker;
  } catch {
    return []; // not logged in: the cache is all there is to show
  }
  const ids = new Set(
    Object.values(cached).flatMap((entry) => Object.values(entry.bindings).map((b) => b.session_id)),
  );
  /** Session id → whether its sandbox ended, for the sessions that are over. */
  const over = new Map<string, boolean>();
  await Promise.all(
    [...ids].map((id) =>
      broker.inspect(id, { timeoutMs: CHECK_TIMEOUT_MS }).then(
        () => undefined,
        (err: unknown) => {
          if (isGone(err))
            over.set(id, err instanceof SbxError && err.details?.['sandbox_state'] !== undefined);
        },
      ),
    ),
  );
  const emptied: Dropped[] = [];
  const touched = Object.entries(cached).filter(([, entry]) =>
    Object.values(entry.bindings).some((binding) => over.has(binding.session_id)),
  );
  for (const [thread] of touched) {
    ctx.store.updateThread(thread, (entry) => {
      if (entry === undefined) return undefined;
      const kept = Object.entries(entry.bindings).filter(([, binding]) => !over.has(binding.session_id));
      if (kept.length === Object.keys(entry.bindings).length) return entry;
      if (kept.length === 0) {
        const sandboxEnded = Object.values(entry.bindings).some((b) => over.get(b.session_id) === true);
        emptied.push({ thread, sandboxEnded });
        return undefined;
      }
      return { ...entry, bindings: Object.fromEntries(kept) };
    });
  }
  return emptied;
}
