// One load run: N sessions on threads of their own, each an SDK client doing what a user
// at a terminal and an agent saving files do at once, through the SDK as they would:
//  - open: ensure the thread's sandbox (a warm claim or a cold start) and open a PTY shell;
//  - work: every session starts at the same moment (a barrier) and works for the same
//    time: the shell types `echo tick-<n>-$((<n>*7))` and waits for `tick-<n>-<7n>` (the
//    computed line, never the typed echo of the input), the writer writes a file of random
//    bytes and reads it back, comparing hashes;
//  - close: the shell is ended (its exit must arrive) and the session released.
// Anything that throws, times out or reads back wrong is an error, named by session and
// operation; latencies are kept per operation for percentiles. No jest here (soak.ts).
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { BrokerSession, type BrokerClient, type Shell } from '../../packages/client/src/index.js';
import { percentile } from './probes.js';

export const OPERATIONS = [
  'ensure',
  'shell open',
  'line echo',
  'file write',
  'file read',
  'shell exit',
  'release',
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** A line typed into a shell that has not come back by then is an error (a hang). */
const ECHO_CEILING_MS = 60_000;

export interface LoadOptions {
  readonly client: BrokerClient;
  readonly sessions: number;
  readonly workMs: number;
  /** Each shell types a line this often (after the previous one came back). */
  readonly lineEveryMs: number;
  /** Each writer writes and reads back a file this often. */
  readonly writeEveryMs: number;
  /** Thread ids are `<prefix>-<i>`. */
  readonly threadPrefix: string;
  /**
   * Every SDK call's ceiling (the SDK's default is 30 s): generous, so that a slow answer on
   * a loaded machine shows as latency, reported, and only a hang as an error. The broker
   * client passed in should have the same.
   */
  readonly callTimeoutMs: number;
  /** Called between work and close, all shells still open (e.g. to measure agents). */
  readonly afterWork?: (sandboxIds: readonly string[]) => Promise<void> | void;
}

export interface LoadResult {
  readonly latencies: ReadonlyMap<Operation, number[]>;
  readonly errors: readonly string[];
  readonly sandboxIds: readonly string[];
  /** Each session's ensure: its sandbox and how long it took (claims and cold starts apart). */
  readonly ensures: ReadonlyMap<string, number>;
  readonly wallMs: number;
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Resolves when `check` holds after some output arrived, rejects after `ceilingMs`. */
export function outputMatches(
  shell: Shell,
  check: () => boolean,
  what: string,
  ceilingMs: number,
): Promise<void> {
  if (check()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const stop = shell.onData(() => {
      if (!check()) return;
      clearTimeout(timer);
      stop();
      resolve();
    });
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no ${what} within ${ceilingMs} ms`));
    }, ceilingMs);
  });
}

/**
 * Paces a loop at a steady rate, as a user types: the gap to the next start is the rate's,
 * less the time the operation took (a slow operation is followed at once, never by a burst
 * catching up). This is the load's rate, not a wait for an event.
 */
async function pace(startedAt: number, everyMs: number, endsAt: number): Promise<void> {
  const next = Math.min(endsAt, startedAt + everyMs);
  if (next > performance.now()) await sleep(next - performance.now());
}

/** Resolves `done` once `tick()` was called `count` times. */
function countdown(count: number): { tick: () => void; done: Promise<void> } {
  let left = count;
  let resolve: () => void = () => undefined;
  const done = new Promise<void>((r) => (resolve = r));
  if (left <= 0) resolve();
  return {
    tick() {
      left -= 1;
      if (left === 0) resolve();
    },
    done,
  };
}

/** A promise and the function that settles it. */
function gate(): { open: () => void; opened: Promise<void> } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies = new Map<Operation, number[]>(OPERATIONS.map((op) => [op, []]));
  const errors: string[] = [];
  const sandboxIds: string[] = [];
  const ensures = new Map<string, number>();
  const timed = async <T>(op: Operation, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const value = await run();
    latencies.get(op)!.push(performance.now() - started);
    return value;
  };
  const allOpen = countdown(options.sessions);
  const allWorked = countdown(options.sessions);
  const work = gate();
  const close = gate();
  let workEndsAt = 0;
  const started = performance.now();

  const session = async (i: number): Promise<void> => {
    const name = `${options.threadPrefix}-${i}`;
    const fail = (op: string, err: unknown): void => {
      errors.push(`${name} ${op}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    };
    let phase: 'open' | 'work' | 'close' = 'open';
    let held: BrokerSession | undefined;
    let shell: Shell | undefined;
    try {
      const asked = performance.now();
      held = await timed('ensure', () =>
        BrokerSession.ensure(options.client, {
          scope: { type: 'thread', id: name },
          actor: { type: 'human', id: `human-${name}` },
        }),
      );
      sandboxIds.push(held.response.sandbox.id);
      ensures.set(held.response.sandbox.id, performance.now() - asked);
      const sandbox = held.sandbox({ timeoutMs: options.callTimeoutMs });
      shell = await timed('shell open', () => sandbox.openShell());
      const open = shell;
      let output = '';
      open.onData((data) => {
        // Only the tail can hold the line awaited; the rest is kept from growing.
        output = (output + data.toString('utf8')).slice(-16_384);
      });
      phase = 'work';
      allOpen.tick();
      await work.opened;
      const typer = async (): Promise<void> => {
        for (let n = 1; performance.now() < workEndsAt; n += 1) {
          const t = performance.now();
          const wanted = `tick-${n}-${n * 7}`;
          try {
            await timed('line echo', async () => {
              open.write(`echo tick-${n}-$((${n}*7))\n`);
              await outputMatches(open, () => output.includes(wanted), `echo of ${wanted}`, ECHO_CEILING_MS);
            });
            output = output.slice(output.indexOf(wanted) + wanted.length);
          } catch (err) {
            fail('line echo', err);
            return;
          }
          await pace(t, options.lineEveryMs, workEndsAt);
        }
      };
      const writer = async (): Promise<void> => {
        for (let n = 1; performance.now() < workEndsAt; n += 1) {
          const t = performance.now();
          // Four files rewritten in turn: the workspace stays small however long the run.
          const file = `load/w${n % 4}.bin`;
          const bytes = randomBytes(1024 + ((n * 997) % 15_360));
          try {
            await timed('file write', () => sandbox.files.write(file, bytes));
            const back = await timed('file read', () => sandbox.files.read(file));
            if (sha256(back) !== sha256(bytes))
              throw new Error(`${file} read back ${back.length} bytes that differ`);
          } catch (err) {
            fail('file', err);
            return;
          }
          await pace(t, options.writeEveryMs, workEndsAt);
        }
      };
      await Promise.all([typer(), writer()]);
      phase = 'close';
      allWorked.tick();
      await close.opened;
      await timed('shell exit', async () => {
        open.close();
        await open.exited;
      });
      shell = undefined;
      const ending = held;
      held = undefined;
      await timed('release', () => ending.release());
    } catch (err) {
      fail(phase, err);
      // The phases this session will not reach still count, or the run would wait for it.
      if (phase === 'open') allOpen.tick();
      if (phase !== 'close') allWorked.tick();
    } finally {
      // After an error: leave nothing open or bound behind.
      shell?.detach();
      await held?.release().catch((err: unknown) => fail('release after an error', err));
    }
  };

  const sessions = Array.from({ length: options.sessions }, (_, i) => session(i));
  await allOpen.done;
  workEndsAt = performance.now() + options.workMs;
  work.open();
  await allWorked.done;
  await options.afterWork?.(sandboxIds);
  close.open();
  await Promise.all(sessions);
  return { latencies, errors, sandboxIds, ensures, wallMs: performance.now() - started };
}

/** Errors by kind (thread names and numbers taken out), most frequent first. */
export function errorKinds(errors: readonly string[]): string[] {
  const kinds = new Map<string, number>();
  for (const error of errors) {
    const kind = error.replaceAll(/(thr|sb|req)_[\w-]+|\d+/g, '…');
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  return [...kinds].toSorted((a, b) => b[1] - a[1]).map(([kind, n]) => `${n} × ${kind}`);
}

/** `op  n  p50  p99  max` rows, milliseconds. */
export function latencyTable(latencies: ReadonlyMap<Operation, number[]>): string {
  const rows = [...latencies].map(([op, values]) =>
    [
      op.padEnd(12),
      String(values.length).padStart(6),
      ...[50, 99, 100].map((p) => percentile(values, p).toFixed(1).padStart(9)),
    ].join(' '),
  );
  return [
    `${'operation'.padEnd(12)} ${'n'.padStart(6)} ${'p50 ms'.padStart(9)} ${'p99 ms'.padStart(9)} ${'max ms'.padStart(9)}`,
    ...rows,
  ].join('\n');
}
