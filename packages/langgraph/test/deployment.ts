// The broker as `pnpm start` runs it (its own start script: the bundle's build, then the
// broker with the script's variables and node arguments, on embedded defaults: PGlite, local
// sandboxes), on a free port and a fresh data directory; the URL and admin key it prints.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Deployment {
  readonly url: string;
  readonly adminKey: string;
  close(): Promise<void>;
}

export interface StartStep {
  readonly env: Record<string, string>;
  readonly args: string[];
}

/**
 * services/broker's `start` script, `node <build> && A=1 B=2 node <args>`: each step's
 * variables and node's arguments, the broker itself last.
 */
export function brokerStartSteps(): StartStep[] {
  const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'services/broker/package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  return manifest.scripts.start.split('&&').map((step) => {
    const words = step.trim().split(/\s+/);
    const env: Record<string, string> = {};
    for (let word = words[0]; word !== undefined && /^[A-Z_]+=/.test(word); word = words[0]) {
      words.shift();
      env[word.slice(0, word.indexOf('='))] = word.slice(word.indexOf('=') + 1);
    }
    if (words.shift() !== 'node') throw new Error('a step of the broker start script no longer runs node');
    return { env, args: words };
  });
}

export async function startDeployment(): Promise<Deployment> {
  const steps = brokerStartSteps();
  const start = steps.at(-1)!;
  // The steps before it (the build of the broker's bundle), run as the script runs them.
  for (const step of steps.slice(0, -1)) {
    const ran = spawnSync(process.execPath, step.args, {
      cwd: path.join(REPO_ROOT, 'services/broker'),
      env: { ...step.env, PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
      encoding: 'utf8',
    });
    if (ran.status !== 0) throw new Error(`node ${step.args.join(' ')} failed:\n${ran.stderr}`);
  }
  const dataDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-langgraph-')));
  const broker: ChildProcess = spawn(process.execPath, start.args, {
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
