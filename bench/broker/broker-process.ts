import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, realpathSync } from 'node:fs';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { envOf, finalStage, lastInstruction, readDockerfile } from '../../deploy/test/dockerfile.js';
import type { Verdict } from '../lib/measure.js';
import { cpuMs } from '../lib/process-stats.js';
import { makeTempDir, removeTempDir, spawnTracked, stopTracked } from '../lib/resources.js';
import { killProcessesOf } from './sandbox-processes.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * More environment for the broker, for investigations only: `BENCH_BROKER_ENV='A=1 B=2'`
 * (e.g. `DATABASE_POOL_SIZE=30`, or other glibc malloc tunables than the image's).
 */
function extraBrokerEnv(): Record<string, string> {
  const pairs = (process.env['BENCH_BROKER_ENV'] ?? '').split(' ').filter((pair) => pair.includes('='));
  return Object.fromEntries(
    pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
}

/**
 * How the broker image starts the broker (deploy/docker/broker.Dockerfile), read off its
 * Dockerfile: the CMD's arguments after `node` (its V8 flags, then the bundle
 * scripts/build-broker.mjs writes, built here first as the image's build stage does) and the
 * glibc malloc tunables of its ENV, which act before node starts. So the broker runs here as
 * its image runs it.
 */
function imageRuntime(): { readonly args: readonly string[]; readonly env: Record<string, string> } {
  const image = finalStage(readDockerfile(path.join(REPO_ROOT, 'deploy', 'docker', 'broker.Dockerfile')));
  const command = lastInstruction(image, 'CMD')?.exec ?? [];
  if (command[0] !== 'node') throw new Error('the broker image no longer starts node: update the bench');
  const env = Object.fromEntries([...envOf(image)].filter(([name]) => name.startsWith('MALLOC_')));
  const build = spawnSync(process.execPath, ['scripts/build-broker.mjs'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (build.status !== 0) throw new Error(`scripts/build-broker.mjs failed:\n${build.stderr}`);
  return { args: command.slice(1), env };
}

/** Bundling the agent and migrating a fresh database come before `listening`. */
const START_TIMEOUT_MS = 90_000;
/** The provider stops each agent with up to 5 s of grace, all at once. */
const STOP_GRACE_MS = 30_000;

/** The identity of BROKER_BOOTSTRAP_API_KEY (bootstrap.ts ADMIN_KEY_IDENTITY). */
export const BOOTSTRAP_TENANT_ID = 'default';
export const BOOTSTRAP_PRINCIPAL_ID = 'admin';

export interface BrokerProcess {
  readonly pid: number;
  readonly url: string;
  readonly apiKey: string;
  readonly dataDir: string;
  /** CPU time the broker process has used so far, ms. */
  cpuMs(): number;
  /** SIGTERM (its provider stops every agent), then removes its data; returns agents left behind. */
  stop(): Promise<number>;
}

export interface BrokerOptions {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** More settings, as an operator would give them (e.g. RATE_LIMIT_SESSION_PER_MINUTE). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Resolves with the banner's URL; keeps draining both pipes so the broker never blocks on them. */
function listeningUrl(child: ChildProcess): Promise<string> {
  const seen: string[] = [];
  // For investigations: `BENCH_BROKER_LOG=/tmp/broker.log` keeps every line the broker writes.
  const logFile = process.env['BENCH_BROKER_LOG'];
  const keep = (line: string): void => {
    if (seen.length < 80) seen.push(line);
    if (logFile !== undefined) appendFileSync(logFile, `${line}\n`);
  };
  createInterface({ input: child.stderr! }).on('line', keep);
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`broker did not start:\n${seen.join('\n')}`)),
      START_TIMEOUT_MS,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited (${code}) before listening:\n${seen.join('\n')}`));
    });
    lines.on('line', (line) => {
      keep(line);
      const url = /listening on (http:\/\/\S+)/.exec(line)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      resolve(url);
    });
  });
}

/**
 * The broker as operators run it on Postgres (its image's command): configured by environment
 * only, with the local provider confining user processes with bubblewrap; node itself is
 * the broker's process, so the pid is the broker's own.
 * LOG_LEVEL=info, the production default: the broker writes no line per successful
 * request at info, so this measures what operators run; node's flags and glibc's malloc
 * tunables as the image sets them.
 */
export async function startBrokerProcess(options: BrokerOptions): Promise<BrokerProcess> {
  const dataDir = realpathSync(makeTempDir('sbx-bench-broker-'));
  const apiKey = `sbk_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;
  // e.g. BENCH_BROKER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile the broker.
  const nodeArgs = (process.env['BENCH_BROKER_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '');
  const image = imageRuntime();
  const child = spawnTracked(process.execPath, [...nodeArgs, ...image.args], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOST: '127.0.0.1',
      PORT: '0',
      BROKER_DATA_DIR: dataDir,
      DATABASE_URL: options.databaseUrl,
      REDIS_URL: options.redisUrl,
      BROKER_MASTER_KEY: randomBytes(32).toString('base64url'),
      BROKER_BOOTSTRAP_API_KEY: apiKey,
      LOCAL_ISOLATION: 'bubblewrap',
      LOG_LEVEL: 'info',
      ...image.env,
      ...options.env,
      ...extraBrokerEnv(),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A run that is killed leaves no agent: their groups are not the broker's.
  const sweep = (): void => void killProcessesOf(dataDir);
  process.once('exit', sweep);
  const stop = async (): Promise<number> => {
    const stopping = Date.now();
    await stopTracked(child, STOP_GRACE_MS);
    if (Date.now() - stopping >= STOP_GRACE_MS)
      console.error(`   the broker did not exit within ${STOP_GRACE_MS} ms of SIGTERM and was killed`);
    const leftBehind = killProcessesOf(dataDir);
    process.off('exit', sweep);
    removeTempDir(dataDir);
    return leftBehind;
  };
  try {
    const url = await listeningUrl(child);
    const pid = child.pid!;
    return { pid, url, apiKey, dataDir, cpuMs: () => cpuMs(pid), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** What `stop` answered, as a verdict: every agent the broker started must be gone. */
export function agentsLeftVerdict(leftBehind: number): Verdict {
  return {
    metric: 'cleanup: sandbox processes left running after the broker stopped',
    value: leftBehind,
    unit: '',
    target: '= 0',
    pass: leftBehind === 0,
  };
}
