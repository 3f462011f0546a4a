// The broker as `pnpm start` runs it (its own entry point on embedded defaults: PGlite, local
// sandboxes), on a free port and a fresh data directory; the URL and admin key it prints.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
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

export async function startDeployment(): Promise<Deployment> {
  const tsx = pathToFileURL(createRequire(path.join(REPO_ROOT, 'package.json')).resolve('tsx')).href;
  const dataDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-langgraph-')));
  const broker: ChildProcess = spawn(process.execPath, ['--import', tsx, 'src/main.ts'], {
    cwd: path.join(REPO_ROOT, 'services/broker'),
    env: {
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
