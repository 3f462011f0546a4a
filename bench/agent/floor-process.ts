import { createInterface } from 'node:readline';
import { spawnTracked, stopTracked } from '../lib/resources.js';
import { REPO_ROOT } from './agent-process.js';

export interface FloorServer {
  readonly pid: number;
  /** Answers every request with 204. */
  readonly httpPort: number;
  /** Streams the file named by the first line a client sends, then closes. */
  readonly tcpPort: number;
  stop(): Promise<void>;
}

/** Starts bench/agent/floor-server.ts in its own process. */
export async function startFloorServer(): Promise<FloorServer> {
  const child = spawnTracked(process.execPath, ['--import', 'tsx', 'bench/agent/floor-server.ts'], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = (): Promise<void> => stopTracked(child, 1000);
  try {
    const line = await new Promise<string>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`floor server exited (${code}) before listening`)));
      createInterface({ input: child.stdout! }).once('line', resolve);
    });
    const ports = JSON.parse(line) as { http: number; tcp: number };
    return { pid: child.pid!, httpPort: ports.http, tcpPort: ports.tcp, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
