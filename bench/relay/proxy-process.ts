/** A context proxy (pipe-proxy.ts, express-proxy.ts) as a separate process, as bench/broker runs its floor server. */
import { createInterface } from 'node:readline';
import { REPO_ROOT } from '../broker/broker-process.js';
import { cpuMs } from '../lib/process-stats.js';
import { spawnTracked, stopTracked } from '../lib/resources.js';

export interface ProxyProcess {
  readonly pid: number;
  /** Stands in for the agent's base URL: same paths, same token. */
  readonly url: string;
  cpuMs(): number;
  stop(): Promise<void>;
}

/**
 * Starts bench/relay/pipe-proxy.ts (or `script`: express-proxy.ts) in its own process,
 * forwarding to `agentUrl`.
 */
export async function startProxyProcess(
  agentUrl: string,
  script = 'bench/relay/pipe-proxy.ts',
): Promise<ProxyProcess> {
  // e.g. BENCH_PROXY_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile the proxy.
  const nodeArgs = (process.env['BENCH_PROXY_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '');
  const child = spawnTracked(process.execPath, [...nodeArgs, '--import', 'tsx', script], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PROXY_TARGET: agentUrl },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = (): Promise<void> => stopTracked(child, 2000);
  try {
    const line = await new Promise<string>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`proxy exited (${code}) before listening`)));
      createInterface({ input: child.stdout! }).once('line', resolve);
    });
    const { port } = JSON.parse(line) as { port: number };
    const pid = child.pid!;
    return { pid, url: `http://127.0.0.1:${port}`, cpuMs: () => cpuMs(pid), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
