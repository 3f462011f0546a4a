import { statSync } from 'node:fs';
import path from 'node:path';
import { NotFoundError } from '@sbx/client';
import { loggedIn, parseCommand, printJson, type CliContext, type LoggedIn } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { absoluteRemote, parseRemotePath, WORKSPACE, type RemotePath } from '../remote-path.js';
import type { LocalTree } from '../sync/local-tree.js';
import { SyncManifest } from '../sync/manifest.js';
import { pull } from '../sync/pull.js';
import { push } from '../sync/push.js';
import { changeLine, summaryLine, SyncReport, type Change } from '../sync/report.js';
import type { SyncTarget } from '../sync/sync-target.js';
import { watchPush } from '../sync/watch.js';
import { ThreadSessions } from '../thread-sessions.js';

const USAGE =
  'sync: sbx sync <dir> <thread>[:<path>] [--delete] [--watch] | sbx sync <thread>:[<path>] <dir> [--delete]';

interface Route {
  readonly direction: 'push' | 'pull';
  readonly localRoot: string;
  readonly remote: RemotePath;
}

/**
 * Mirrors a directory between this machine and a sandbox: a push when the sandbox side comes
 * second, a pull when it comes first. `--delete` removes what the source side lacks,
 * `--watch` (push only) keeps pushing local changes until Ctrl-C or SIGTERM. The sandbox
 * side is a sandbox path (`t1:proj`, `t1:` or `t1` for the workspace, `t1:/workspace/proj`, `t1:/tmp/d`),
 * resolved to its absolute form before anything is compared or remembered (see openTarget).
 */
export async function sync(ctx: CliContext, args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommand('sync', args, {
    delete: { type: 'boolean' },
    watch: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const route = routeOf(positionals);
  const watching = values.watch === true;
  const json = values.json === true;
  if (watching && route.direction === 'pull')
    throw new UsageError(`${USAGE} (--watch pushes local changes; it does not pull)`);
  if (route.direction === 'push') requireLocalDirectory(route.localRoot);
  const login = loggedIn(ctx);
  const target = await openTarget(ctx, login, route, values.delete === true, (change) => {
    if (!json) ctx.stdout.write(`${changeLine(change)}\n`);
    else if (watching) ctx.stdout.write(`${JSON.stringify(change)}\n`);
  });
  if (route.direction === 'pull') await pull(target);
  else {
    const pushed = await push(target);
    if (watching) await watchUntilStopped(ctx, login, target, pushed);
  }
  const summary = target.report.summary();
  if (!json) ctx.stdout.write(`${summaryLine(summary)}\n`);
  else if (watching) ctx.stdout.write(`${JSON.stringify(summary)}\n`);
  else printJson(ctx, summary);
  return EXIT.ok;
}

function routeOf(positionals: readonly string[]): Route {
  const [first, second] = positionals;
  if (first === undefined || second === undefined || positionals.length > 2) throw new UsageError(USAGE);
  const from = parseRemotePath(first);
  const to = parseRemotePath(second);
  if (from !== undefined && to !== undefined) throw new UsageError(`${USAGE} (one side is local)`);
  if (from !== undefined) return { direction: 'pull', localRoot: path.resolve(second), remote: from };
  // `sbx sync src t1`: a bare thread is its workspace; a pull needs the colon (`t1:`).
  if (to === undefined && second.includes('/')) throw new UsageError(`${USAGE} (one side is a sandbox)`);
  return {
    direction: 'push',
    localRoot: path.resolve(first),
    remote: to ?? { thread: second, path: WORKSPACE },
  };
}

function requireLocalDirectory(dir: string): void {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    throw new NotFoundError(`sync: ${dir}: no such directory`);
  }
  if (!isDirectory) throw new UsageError(`sync: ${dir} is not a directory (sbx cp copies one file)`);
}

async function openTarget(
  ctx: CliContext,
  { config, broker }: LoggedIn,
  route: Route,
  deleteExtra: boolean,
  onChange: (change: Change) => void,
): Promise<SyncTarget> {
  const { thread } = route.remote;
  const currentSandbox = (): string | undefined => ctx.store.readThreads()[thread]?.sandbox_id;
  const cachedBefore = currentSandbox();
  const sessions = new ThreadSessions(broker, ctx.store, config.actor_id);
  const sandbox = await sessions.sandbox(thread, 'human');
  // The agent names every path absolutely (`/workspace/proj/a.txt`): the root in that form
  // makes `t1:`, `t1:.` and `t1:/workspace` one sync pair (one manifest) and the report
  // name the directory as the sandbox's processes see it.
  const remoteRoot = absoluteRemote(await sessions.workspacePath(thread, sandbox), route.remote.path);
  const sandboxId = currentSandbox() ?? thread;
  // Opening may already have renegotiated: the sandbox the cache named is the one to compare with.
  const sandboxAtStart = cachedBefore ?? currentSandbox();
  const manifest = SyncManifest.load(ctx.store.home, { sandboxId, remoteRoot, localRoot: route.localRoot });
  const base = { direction: route.direction, local: route.localRoot, remote: `${thread}:${remoteRoot}` };
  const report = new SyncReport(base, onChange);
  return {
    files: sandbox.files,
    thread,
    localRoot: route.localRoot,
    remoteRoot,
    manifest,
    report,
    deleteExtra,
    sandboxAtStart,
    currentSandbox,
  };
}

/** Ctrl-C or SIGTERM ends the watch cleanly (exit 0, summary printed); a second Ctrl-C kills. */
async function watchUntilStopped(
  ctx: CliContext,
  { broker }: LoggedIn,
  target: SyncTarget,
  pushed: LocalTree,
): Promise<void> {
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  ctx.stderr.write(`watching ${target.localRoot} → ${target.thread}:${target.remoteRoot} (Ctrl-C stops)\n`);
  const heartbeat = async (): Promise<void> => {
    const session = ctx.store.readThreads()[target.thread]?.bindings.human?.session_id;
    if (session !== undefined) await broker.heartbeat(session);
  };
  try {
    await watchPush({
      target,
      pushed,
      stop: stop.signal,
      notice: (line) => ctx.stderr.write(`${line}\n`),
      heartbeat,
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
