// A Postgres and a Redis of the suite's own, on free ports under a temporary directory, which
// it may stop, kill and start again: the machine's shared servers (5432, 6379) serve other
// people's tests at the same time and are never touched. Postgres runs as the `postgres` user
// when the tests run as root (initdb refuses root).
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { until } from '../../services/broker/test/support/until.js';

/** A TCP port nobody listened on a moment ago. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

/** True once something accepts connections on the port. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function postgresBin(name: string): string {
  const versions = readdirSync('/usr/lib/postgresql').toSorted((a, b) => Number(b) - Number(a));
  const version = versions[0];
  if (version === undefined) throw new Error('no Postgres under /usr/lib/postgresql');
  return path.join('/usr/lib/postgresql', version, 'bin', name);
}

const asRoot = process.getuid?.() === 0;

/** Runs a Postgres tool as the postgres user (as root) or as ourselves; rejects with its output. */
function runPostgresTool(name: string, args: readonly string[]): Promise<void> {
  const [command, argv] = asRoot
    ? ['runuser', ['-u', 'postgres', '--', postgresBin(name), ...args]]
    : [postgresBin(name), [...args]];
  return new Promise((resolve, reject) => {
    execFile(command, argv, { cwd: '/' }, (err, stdout, stderr) => {
      if (err === null) resolve();
      else reject(new Error(`${name} ${args.join(' ')} failed:\n${stdout}${stderr}`, { cause: err }));
    });
  });
}

export interface PrivatePostgres {
  readonly port: number;
  /** postgres://postgres@127.0.0.1:<port>/<database> (trust authentication). */
  url(database?: string): string;
  /** Stops the server (`fast`: clients are disconnected, `immediate`: as a crash). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Resolves once the server accepts connections. */
  start(): Promise<void>;
  /** Stops it if running and deletes its files. */
  close(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sbx-faults-pg-'));
  if (asRoot) {
    const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim();
    const groups = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim();
    chownSync(dir, Number(ids), Number(groups));
  }
  const data = path.join(dir, 'data');
  const port = await freePort();
  await runPostgresTool('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses='127.0.0.1'",
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=100',
  ].join(' ');
  let running = false;
  const start = async (): Promise<void> => {
    await runPostgresTool('pg_ctl', ['-D', data, '-o', options, '-l', path.join(dir, 'log'), '-w', 'start']);
    running = true;
  };
  const stop = async (mode: 'fast' | 'immediate' = 'fast'): Promise<void> => {
    if (!running) return;
    await runPostgresTool('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
    running = false;
  };
  await start();
  return {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop,
    start,
    async close() {
      try {
        await stop('immediate');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** Kills the server (SIGKILL: as a crash or a pulled cable) and waits for its exit. */
  stop(): Promise<void>;
  /** Starts it again, empty, on the same port; resolves once it accepts connections. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    const started = spawn('redis-server', args, { stdio: 'ignore' });
    child = started;
    await until(async () => {
      if (started.exitCode !== null) throw new Error(`redis-server exited with ${started.exitCode}`);
      return accepts(port);
    }, `redis-server on port ${port}`);
  };
  const stop = async (): Promise<void> => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return { port, url: `redis://127.0.0.1:${port}`, stop, start, close: stop };
}
