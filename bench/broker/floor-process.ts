import { createInterface } from 'node:readline';
import { cpuMs } from '../lib/process-stats.js';
import { spawnTracked, stopTracked } from '../lib/resources.js';
import { REPO_ROOT } from './broker-process.js';

export interface FloorProcess {
  readonly pid: number;
  /** `POST` a scope and actor here: the read and the committed insert of a `get` (floor-server.ts). */
  readonly url: string;
  cpuMs(): number;
  stop(): Promise<void>;
}

/** Pool size of the broker's Prisma adapter (DATABASE_POOL_SIZE, unset in the bench: 10). */
const BROKER_POOL_SIZE = 10;

/** Starts bench/broker/floor-server.ts in its own process, against `databaseUrl`. */
export async function startFloorProcess(databaseUrl: string): Promise<FloorProcess> {
  const child = spawnTracked(process.execPath, ['--import', 'tsx', 'bench/broker/floor-server.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      FLOOR_DATABASE_URL: databaseUrl,
      FLOOR_POOL_MAX: String(BROKER_POOL_SIZE),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = (): Promise<void> => stopTracked(child, 2000);
  try {
    const line = await new Promise<string>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`floor server exited (${code}) before listening`)));
      createInterface({ input: child.stdout! }).once('line', resolve);
    });
    const { port } = JSON.parse(line) as { port: number };
    const pid = child.pid!;
    return { pid, url: `http://127.0.0.1:${port}/v1/floor`, cpuMs: () => cpuMs(pid), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
