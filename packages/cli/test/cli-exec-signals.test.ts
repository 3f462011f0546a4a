// `sbx` as a process in its own process group, as a terminal runs it: what Ctrl-C and
// SIGTERM do to `sbx exec` and to the bin wrapper's exit status, how a piped `sbx shell`
// ends, and how `sbx exec` output waits for a slow reader.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { CliStore } from '../src/store.js';
import { SBX_BIN, logInAndEnsure, sbxEnv, sbxRunner, type SbxRunner } from './support.js';
import { TcpRelay } from './tcp-relay.js';

const SLOW = 120_000;
const THREAD = 'thr_signals';
/** Its exec goes through a relay that freezes. */
const FROZEN = 'thr_frozen';
let real: RealBroker;
let cli: SbxRunner;
const children: ChildProcessWithoutNullStreams[] = [];
const relays: TcpRelay[] = [];

interface Running {
  readonly child: ChildProcessWithoutNullStreams;
  readonly ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): { stdout: string; stderr: string };
  waitForStdout(pattern: RegExp): Promise<void>;
  /** A signal to the whole process group, as a terminal sends Ctrl-C. */
  signalGroup(signal: NodeJS.Signals): void;
}

/** `sbx …` in a process group of its own; stdout is read only when `readStdout` (the default). */
function startSbx(args: readonly string[], readStdout = true): Running {
  const child = spawn(process.execPath, [SBX_BIN, ...args], {
    env: sbxEnv(cli.home),
    stdio: 'pipe',
    detached: true,
  });
  children.push(child);
  const out = { stdout: '', stderr: '' };
  if (readStdout) child.stdout.on('data', (chunk: Buffer) => (out.stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (out.stderr += chunk.toString('utf8')));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    ended,
    output: () => out,
    async waitForStdout(pattern) {
      const deadline = Date.now() + 60_000;
      while (!pattern.test(out.stdout)) {
        if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null)
          throw new Error(`no ${String(pattern)} in:\n${out.stdout}\n${out.stderr}`);
        await sleep(50);
      }
    },
    signalGroup: (signal) => process.kill(-(child.pid ?? 0), signal),
  };
}

/**
 * `sbx exec` on a thread whose cached agent address is a relay, frozen once the command
 * printed: the signal sbx forwards never arrives, and no exit ever comes back.
 */
async function startFrozenExec(): Promise<Running> {
  const store = new CliStore(cli.home);
  const entry = store.readThreads()[FROZEN];
  if (entry === undefined) throw new Error(`${FROZEN} is not cached`);
  const relay = await TcpRelay.start(new URL(entry.http_base_url));
  relays.push(relay);
  store.updateThread(FROZEN, (old) =>
    old === undefined
      ? undefined
      : { ...old, http_base_url: relay.via(entry.http_base_url), ws_base_url: relay.via(entry.ws_base_url) },
  );
  const run = startSbx(['exec', FROZEN, '--', 'sh', '-c', 'echo ready; sleep 60']);
  await run.waitForStdout(/ready\n/);
  relay.freeze();
  store.updateThread(FROZEN, () => entry);
  return run;
}

async function sandboxSh(script: string): Promise<string> {
  const result = await cli.sbx(['exec', THREAD, '--', 'sh', '-c', script]);
  if (result.code !== 0) throw new Error(`exec ${script}: ${result.stderr}`);
  return result.stdout;
}

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
  await logInAndEnsure(cli, real.harness.url, real.apiKey, [THREAD, FROZEN]);
}, SLOW);

afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const relay of relays) await relay.down();
  await cli.sbx(['release', THREAD]);
  await cli.sbx(['release', FROZEN]);
  await real.close();
  cli.close();
}, SLOW);

describe('sbx exec and signals', () => {
  it(
    'SIGTERM to the process group reaches the command, which ends: exit 143',
    async () => {
      const run = startSbx(['exec', THREAD, '--', 'sh', '-c', 'echo first; sleep 30; echo never']);
      await run.waitForStdout(/first\n/);
      run.signalGroup('SIGTERM');
      expect(await run.ended).toEqual({ code: 143, signal: null });
      expect(run.output().stdout).toBe('first\n');
    },
    SLOW,
  );

  it(
    'a connection that died: sbx stops waiting after the grace period, exit 143',
    async () => {
      const run = await startFrozenExec();
      run.signalGroup('SIGTERM');
      expect(await run.ended).toEqual({ code: 143, signal: null });
      expect(run.output().stderr).toMatch(
        /^sbx: stopped waiting for the command; the connection was closed/m,
      );
    },
    SLOW,
  );

  it(
    'a second signal gives up at once, with its own status: SIGTERM then Ctrl-C is exit 130',
    async () => {
      const run = await startFrozenExec();
      run.signalGroup('SIGTERM');
      await sleep(1_500); // past the window in which a second SIGTERM is the same one forwarded
      run.signalGroup('SIGINT');
      // 143 would mean the grace period ended it; 130 is the Ctrl-C.
      expect(await run.ended).toEqual({ code: 130, signal: null });
    },
    SLOW,
  );

  it(
    'output waits for a slow reader: the command is held back, nothing is lost',
    async () => {
      const chunks = 1024; // 64 MiB of "y\n" in 64 KiB writes, counted in a file as they go
      const script = `i=0; while [ $i -lt ${chunks} ]; do yes | head -c 65536; i=$((i+1)); echo $i > progress; done`;
      const run = startSbx(['exec', THREAD, '--', 'sh', '-c', script], false);
      const progress = async (): Promise<number> =>
        Number((await sandboxSh('cat progress 2>/dev/null || echo 0')).trim());
      // Nobody reads sbx's stdout: the command must stall well short of the end.
      let last = -1;
      let now = await progress();
      const deadline = Date.now() + 60_000;
      while (now !== last && now < chunks && Date.now() < deadline) {
        await sleep(3_000);
        last = now;
        now = await progress();
      }
      expect(now).toBeLessThan(chunks);

      let bytes = 0;
      run.child.stdout.on('data', (chunk: Buffer) => (bytes += chunk.length));
      expect(await run.ended).toEqual({ code: 0, signal: null });
      expect(bytes).toBe(chunks * 65536);
    },
    SLOW,
  );
});

describe('the bin wrapper and a piped sbx shell', () => {
  for (const [signal, status] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    it(
      `a command killed by ${signal} makes sbx die of ${signal} too (a shell sees ${status}), not exit 0`,
      async () => {
        // `sbx shell` with a pipe for stdin handles no signal: the default action ends it.
        const run = startSbx(['shell', THREAD]);
        run.child.stdin.write('echo "up-$((40+2))"\n');
        await run.waitForStdout(/up-42/);
        run.signalGroup(signal);
        expect(await run.ended).toEqual({ code: null, signal });
      },
      SLOW,
    );
  }

  it(
    'the end of piped input ends the shell, with or without a final newline',
    async () => {
      for (const input of ['echo "piped-$((6*7))"\n', 'echo "piped-$((6*7))"']) {
        const run = startSbx(['shell', THREAD]);
        run.child.stdin.end(input);
        const ended = await Promise.race([run.ended, sleep(60_000, 'still running', { ref: false })]);
        expect(ended).toEqual({ code: 0, signal: null });
        expect(run.output().stdout).toMatch(/^piped-42\r?$/m);
      }
    },
    SLOW,
  );
});
