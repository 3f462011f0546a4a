// `sbx sync` (a real process) where the local side is not what it seems (a symlink where
// the sandbox has a directory, names the agent refuses) and a `--watch` that outlives an
// outage of both the broker and the agent.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { CliStore } from '../src/store.js';
import { logInAndEnsure, sbxRunner, type SbxRunner } from './support.js';
import { TcpRelay } from './tcp-relay.js';
import { startWatch } from './watch-process.js';

const SLOW = 120_000;
/** An outage and a recovery waited through on a loaded machine: more room than one sync needs. */
const OUTAGE = 240_000;
const THREAD = 'thr_safety';
let real: RealBroker;
let cli: SbxRunner;
const relays: TcpRelay[] = [];
const extraRunners: SbxRunner[] = [];

interface Change {
  readonly action: string;
  readonly path: string;
  readonly reason?: string;
}

const local = (...parts: string[]): string => path.join(path.dirname(cli.home), ...parts);

async function sandboxSh(runner: SbxRunner, thread: string, script: string): Promise<string> {
  const result = await runner.sbx(['exec', thread, '--', 'sh', '-c', script]);
  if (result.code !== 0) throw new Error(`exec ${script}: ${result.stderr}`);
  return result.stdout;
}

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
  await logInAndEnsure(cli, real.harness.url, real.apiKey, [THREAD]);
}, SLOW);

afterAll(async () => {
  for (const relay of relays) await relay.down();
  await cli.sbx(['release', THREAD]);
  for (const runner of extraRunners) runner.close();
  await real.close();
  cli.close();
}, SLOW);

describe('sbx sync: the local side', () => {
  it(
    'a pull writes nothing through a local symlink where the sandbox has a directory',
    async () => {
      await sandboxSh(
        cli,
        THREAD,
        'mkdir -p proj/data && echo remote > proj/data/x.txt && echo top > proj/top.txt',
      );
      mkdirSync(local('pulled'));
      mkdirSync(local('elsewhere'));
      symlinkSync(local('elsewhere'), local('pulled', 'data'));

      const result = await cli.sbx(['sync', `${THREAD}:proj`, local('pulled'), '--json']);
      expect(result.code).toBe(0);
      const changes = (JSON.parse(result.stdout) as { changes: Change[] }).changes;
      expect(changes).toContainEqual(expect.objectContaining({ action: 'ignore', path: 'data/' }));
      expect(existsSync(local('elsewhere', 'x.txt'))).toBe(false);
      expect(readFileSync(local('pulled', 'top.txt'), 'utf8')).toBe('top\n');
    },
    SLOW,
  );

  it(
    'a push skips local names the sandbox refuses, with a note, and syncs the rest',
    async () => {
      mkdirSync(local('names'));
      writeFileSync(local('names', 'ok.txt'), 'fine\n');
      writeFileSync(local('names', 'back\\slash.txt'), 'refused\n');
      writeFileSync(local('names', 'tab\there.txt'), 'refused\n');
      await sandboxSh(cli, THREAD, 'mkdir -p names && echo old > names/extra.txt');

      const result = await cli.sbx(['sync', local('names'), `${THREAD}:names`, '--delete']);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(
        /^ignored +back\\slash\.txt: the sandbox does not accept this name: .*backslash$/m,
      );
      // The tab is shown masked, never written raw to the terminal.
      expect(result.stdout).toMatch(/^ignored +tab\?here\.txt: .*control character$/m);
      expect(result.stdout).toMatch(/^deleted +extra\.txt$/m);
      expect(result.stdout).toMatch(/^uploaded +ok\.txt/m);
      expect(result.stdout).toMatch(/: 1 uploaded, 1 deleted, 0 unchanged, 2 ignored, /);
      expect(await sandboxSh(cli, THREAD, 'ls names')).toBe('ok.txt\n');
    },
    SLOW,
  );
});

describe('sbx sync --watch through an outage', () => {
  it(
    'asks the broker again after a failed renegotiation, and pushes once both are back',
    async () => {
      // Its own login and cache, both through relays: the broker's and the agent's.
      const viaRelays = sbxRunner();
      extraRunners.push(viaRelays);
      const broker = await TcpRelay.start(new URL(real.harness.url));
      relays.push(broker);
      await logInAndEnsure(viaRelays, broker.via(real.harness.url), real.apiKey, ['thr_outage']);
      const store = new CliStore(viaRelays.home);
      const cached = store.readThreads()['thr_outage'];
      if (cached === undefined) throw new Error('thr_outage not cached');
      const agent = await TcpRelay.start(new URL(cached.http_base_url));
      relays.push(agent);
      store.updateThread('thr_outage', (entry) =>
        entry === undefined
          ? undefined
          : {
              ...entry,
              http_base_url: agent.via(entry.http_base_url),
              ws_base_url: agent.via(entry.ws_base_url),
            },
      );
      const dir = path.join(path.dirname(viaRelays.home), 'watched');
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'first.txt'), 'first\n');

      const watch = startWatch(viaRelays.home, [dir, 'thr_outage:w']);
      try {
        await watch.waitFor('stdout', /^uploaded +first\.txt/m);
        // The watch has begun (a change before that is sync-watch-start.test.ts's case).
        await watch.waitFor(
          'stderr',
          new RegExp(`^watching .*watched → thr_outage:${cached.workspace_path ?? '?'}/w`, 'm'),
        );
        await agent.down();
        await broker.down();
        writeFileSync(path.join(dir, 'later.txt'), 'during the outage\n');
        // The failed pass says so; how long it waits before the next one is not the point.
        await watch.waitFor('stderr', /; retrying in \d+ s$/m);
        // The broker is back; the cached agent address stays dead: only a new negotiation helps.
        await broker.up();
        await watch.waitFor('stdout', /^uploaded +later\.txt/m);
        expect(await sandboxSh(viaRelays, 'thr_outage', 'cat w/later.txt')).toBe('during the outage\n');
        watch.child.kill('SIGTERM');
        expect(await watch.exited).toBe(0);
      } finally {
        watch.child.kill('SIGKILL');
        await viaRelays.sbx(['release', 'thr_outage']);
      }
    },
    OUTAGE,
  );
});
