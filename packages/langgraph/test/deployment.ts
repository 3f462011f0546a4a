// The broker as `pnpm start` runs it (its own start script's variables and node arguments, on
// embedded defaults: PGlite, local sandboxes), on a free port and a fresh data directory; the
// URL and admin key it prints.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Deployment {
  readonly url: string;
  readonly adminKey: string;
  close(): Promise<void>;
}

/** services/broker's `start` script (`A=1 B=2 node <args>`): its variables and node's arguments. */
export function brokerStartCommand(): { readonly env: Record<string, string>; readonly args: string[] } {
  const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'services/broker/package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = manifest.scripts.start.trim().split(/\s+/);
  const env: Record<string, string> = {};
  for (let word = words[0]; word !== undefined && /^[A-Z_]+=/.test(word); word = words[0]) {
    words.shift();
    env[word.slice(0, word.indexOf('='))] = word.slice(word.indexOf('=') + 1);
  }
  if (words.shift() !== 'node') throw new Error('the broker start script no longer runs node');
  return { env, args: words };
}

export async function startDeployment(): Promise<Deployment> {
  // tsx as a file URL: the loader resolves the same wherever the test runs from.
  const tsx = pathToFileURL(createRequire(path.join(REPO_ROOT, 'package.json')).resolve('tsx')).href;
  const start = brokerStartCommand();
  const dataDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-langgraph-')));
  const args = start.args.map((arg) => (arg === 'tsx' ? tsx : arg));
  const broker: ChildProcess = spawn(process.execPath, args, {
    cwd: path.join(REPO_ROOT, 'services/broker'),
    env: {
      ...start.env,
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      PORT: '0',
      BROKER_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  broker.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString('utf8')).slice(-4000)));
  const exited = new Promise((resolve) => broker.once('exit', resolve));
  const close = async (): Promise<void> => {
    broker.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  let url = '';
  let adminKey = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the broker did not start within 90 s:\n${log}`)),
        90_000,
      );
      broker.once('exit', () => reject(new Error(`the broker exited during start-up:\n${log}`)));
      createInterface({ input: broker.stdout! }).on('line', (line) => {
        url = /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? url;
        adminKey = /admin API key.*: (sbk_\S+)/.exec(line)?.[1] ?? adminKey;
        if (url === '' || adminKey === '') return;
        clearTimeout(timer);
        resolve();
      });
    });
  } catch (err) {
    await close();
    throw err;
  }
  return { url, adminKey, close };
}
