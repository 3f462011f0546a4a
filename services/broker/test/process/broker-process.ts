// A broker process as operators run several of them: main.ts under tsx, or the bundle that
// `pnpm start` and the image run, configured by its environment alone, on a database, data
// directory and (optionally) Redis the test owns, so that it can be SIGKILLed and another
// started in its place. Waits end on the broker's own output, with a ceiling for loaded
// machines.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const tsxLoader = pathToFileURL(createRequire(`${root}package.json`).resolve('tsx')).href;
const MAIN = path.join(root, 'services/broker/src/main.ts');
export const CEILING_MS = 90_000;

export interface BrokerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  output(): string;
  waitFor(pattern: RegExp): Promise<void>;
  /** Sends `signal` and resolves once the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** A strong operator key the broker accepts as BROKER_BOOTSTRAP_API_KEY. */
export function operatorKey(): string {
  return randomBytes(32).toString('base64url');
}

export interface StartOptions {
  /** A bundle of scripts/build-broker.mjs, run by plain node; default main.ts under tsx. */
  readonly bundle?: string;
  readonly cwd?: string;
}

/**
 * What every broker these tests start gets unless `env` says otherwise. No warm pool: on
 * embedded defaults a broker keeps one (two agents started at once), which these tests do
 * not look at; `WARM_POOL_SIZE: ''` (unset) restores the default.
 */
function baseEnv(env: Record<string, string>): Record<string, string> {
  const base = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PORT: '0', LOG_FORMAT: 'json' };
  return { ...base, WARM_POOL_SIZE: '0', ...env };
}

const argsOf = (options: StartOptions): string[] =>
  options.bundle === undefined ? ['--import', tsxLoader, MAIN] : [options.bundle];

export interface BrokerExit {
  readonly code: number | null;
  /** Standard output, when it was a pipe. */
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * A broker expected to stop by itself (a refused start): runs it to its exit. `stdout` is
 * a descriptor to write standard output to instead of a pipe (e.g. /dev/full).
 */
export function runBrokerToExit(
  env: Record<string, string>,
  options: StartOptions & { readonly stdout?: number } = {},
): Promise<BrokerExit> {
  const child = spawn(process.execPath, argsOf(options), {
    cwd: options.cwd ?? root,
    env: baseEnv(env),
    stdio: ['ignore', options.stdout ?? 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  // A broker that does not stop is killed at the ceiling: its exit then shows as a signal's (null).
  const ceiling = setTimeout(() => child.kill('SIGKILL'), CEILING_MS);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(ceiling);
      resolve({ code, stdout, stderr });
    }),
  );
}

export async function startBrokerProcess(
  env: Record<string, string>,
  options: StartOptions = {},
): Promise<BrokerProcess> {
  const child = spawn(process.execPath, argsOf(options), {
    cwd: options.cwd ?? root,
    env: baseEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const waiters = new Set<() => void>();
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const append = (chunk: Buffer): void => {
    text += chunk.toString('utf8');
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  child.once('close', () => {
    for (const waiter of waiters) waiter();
  });
  const waitFor = (pattern: RegExp): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (pattern.test(text)) done();
        else if (child.exitCode !== null || child.signalCode !== null) done(`exited`);
      };
      const done = (why?: string): void => {
        clearTimeout(timer);
        waiters.delete(check);
        if (why === undefined) resolve();
        else reject(new Error(`no ${String(pattern)} (${why}):\n${text.slice(-4000)}`));
      };
      const timer = setTimeout(() => done(`${CEILING_MS} ms passed`), CEILING_MS);
      waiters.add(check);
      check();
    });
  await waitFor(/"msg":"broker listening"/);
  const url = /"url":"(http:\/\/[^"]+)"/.exec(text)?.[1];
  if (url === undefined) throw new Error(`no url in the broker's output:\n${text}`);
  return {
    child,
    url,
    output: () => text,
    waitFor,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Every process below `pid` (children, their children…), from /proc. */
export function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name may hold spaces and parentheses: the fields start after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // It ended while we looked.
    }
  }
  const found: number[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const next = [...parents].filter(([, ppid]) => frontier.includes(ppid)).map(([child]) => child);
    found.push(...next);
    frontier = next;
  }
  return found;
}

/** The value of `name` in a process's environment; undefined when it has none or is gone. */
export function environmentOf(pid: number, name: string): string | undefined {
  try {
    const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return entries.find((entry) => entry.startsWith(`${name}=`))?.slice(name.length + 1);
  } catch {
    return undefined;
  }
}

/** Processes whose working directory is `dir` or inside it. */
export function processesWorkingIn(dir: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const cwd = readlinkSync(`/proc/${entry}/cwd`);
        return cwd === dir || cwd.startsWith(`${dir}/`);
      } catch {
        return false;
      }
    })
    .map(Number);
}

export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

export { until } from '../support/until.js';

export const TEST_REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/**
 * What every broker of one deployment shares: database, master key, the operator's key and
 * data directory, and with `redis` a Redis key prefix of the test's own.
 */
export function deploymentEnv(options: {
  readonly databaseUrl: string;
  readonly dataDir: string;
  readonly adminKey: string;
  readonly redis?: boolean;
}): Record<string, string> {
  return {
    DATABASE_URL: options.databaseUrl,
    BROKER_MASTER_KEY: randomBytes(32).toString('base64url'),
    BROKER_BOOTSTRAP_API_KEY: options.adminKey,
    BROKER_DATA_DIR: options.dataDir,
    ...(options.redis === true
      ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `sbxtest-${randomBytes(6).toString('hex')}` }
      : {}),
  };
}
