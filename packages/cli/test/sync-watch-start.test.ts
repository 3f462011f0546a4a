// The window between the initial push's scan and the watcher's start, held open on purpose:
// a file written there raised no file-system event, and a watch that waited for one never
// pushed it (a CI run on a loaded machine hit this window by chance). In-process, so the
// test decides what happens between the push and the watch; the sandbox is real.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { BrokerClient } from '@sbx/client';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { CLI_RETRY } from '../src/context.js';
import { absoluteRemote } from '../src/remote-path.js';
import { CliStore } from '../src/store.js';
import { SyncManifest } from '../src/sync/manifest.js';
import { push } from '../src/sync/push.js';
import { SyncReport, type Change } from '../src/sync/report.js';
import type { SyncTarget } from '../src/sync/sync-target.js';
import { watchPush } from '../src/sync/watch.js';
import { ThreadSessions } from '../src/thread-sessions.js';
import { logInAndEnsure, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
const THREAD = 'thr_watch_start';
let real: RealBroker;
let cli: SbxRunner;

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
  await logInAndEnsure(cli, real.harness.url, real.apiKey, [THREAD]);
}, SLOW);

afterAll(async () => {
  await cli.sbx(['release', THREAD]);
  await real.close();
  cli.close();
}, SLOW);

/** The push target `sbx sync <dir> <thread>:start` opens, reporting each change to `onChange`. */
async function openTarget(localRoot: string, onChange: (change: Change) => void): Promise<SyncTarget> {
  const store = new CliStore(cli.home);
  const config = store.readConfig();
  if (config === undefined) throw new Error('not logged in');
  const broker = new BrokerClient({ baseUrl: real.harness.url, apiKey: real.apiKey, retry: CLI_RETRY });
  const sessions = new ThreadSessions(broker, store, config.actor_id);
  const sandbox = await sessions.sandbox(THREAD, 'human');
  const sandboxId = store.readThreads()[THREAD]?.sandbox_id;
  // As `sbx sync` does: the root absolute, as the agent names paths (`/workspace/start`).
  const remoteRoot = absoluteRemote(await sessions.workspacePath(THREAD, sandbox), 'start');
  const pair = { sandboxId: sandboxId ?? THREAD, remoteRoot, localRoot };
  const base = { direction: 'push', local: localRoot, remote: `${THREAD}:${remoteRoot}` } as const;
  return {
    files: sandbox.files,
    thread: THREAD,
    localRoot,
    remoteRoot,
    manifest: SyncManifest.load(cli.home, pair),
    report: new SyncReport(base, onChange),
    deleteExtra: false,
    sandboxAtStart: sandboxId,
    currentSandbox: () => new CliStore(cli.home).readThreads()[THREAD]?.sandbox_id,
  };
}

it(
  'pushes a file written after the initial push scanned and before the watch began',
  async () => {
    const dir = path.join(path.dirname(cli.home), 'start');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'first.txt'), 'first\n');
    let sawLater: () => void = () => undefined;
    const laterUploaded = new Promise<void>((resolve) => (sawLater = resolve));
    const target = await openTarget(dir, (change) => {
      if (change.action === 'upload' && change.path === 'later.txt') sawLater();
    });
    const pushed = await push(target);
    writeFileSync(path.join(dir, 'later.txt'), 'between push and watch\n');

    const stop = new AbortController();
    const watching = watchPush({
      target,
      pushed,
      stop: stop.signal,
      notice: () => undefined,
      heartbeat: () => Promise.resolve(),
    });
    try {
      // No event will come for later.txt: the upload is the watch's own doing (or the test's timeout).
      await laterUploaded;
    } finally {
      stop.abort();
      await watching;
    }
    expect(await target.files.readText('start/later.txt')).toBe('between push and watch\n');
    expect(await target.files.readText(`${target.remoteRoot}/later.txt`)).toBe('between push and watch\n');
  },
  SLOW,
);
