// The broker's main.ts run as `pnpm start` runs it (tsx, the environment alone configures it),
// its standard output either a pipe or a terminal (node-pty), on embedded defaults in a
// fresh data directory. Waits end on the output itself, with a ceiling for loaded machines.
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { spawn as spawnPty } from 'node-pty';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const tsxLoader = pathToFileURL(createRequire(`${root}package.json`).resolve('tsx')).href;
const MAIN = path.join(root, 'services/broker/src/main.ts');
const CEILING_MS = 90_000;

export interface BrokerRun {
  /** Everything printed so far, terminal colours removed. */
  output(): string;
  /** Resolves once `pattern` is in the output; rejects when the broker exits or the ceiling passes. */
  waitFor(pattern: RegExp): Promise<void>;
  /** SIGTERM, then the exit code once it has exited. */
  stop(): Promise<number | null>;
}

/** Starts the broker with `env` (on top of PORT=0 and its own data directory). */
export function startBroker(on: 'pipe' | 'terminal', env: Record<string, string>): BrokerRun {
  const dataDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-broker-run-')));
  const fullEnv = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    PORT: '0',
    BROKER_DATA_DIR: dataDir,
    // No warm pool (the embedded default starts two agents): these runs look at the output.
    WARM_POOL_SIZE: '0',
    ...env,
  };
  const args = ['--import', tsxLoader, MAIN];
  let text = '';
  let exitCode: number | null | undefined;
  const waiters = new Set<() => void>();
  const changed = (): void => {
    for (const waiter of waiters) waiter();
  };
  const append = (chunk: string): void => {
    text += stripVTControlCharacters(chunk);
    changed();
  };
  let resolveExit: (code: number | null) => void = () => undefined;
  const exited = new Promise<number | null>((resolve) => (resolveExit = resolve));
  const onExit = (code: number | null): void => {
    exitCode = code;
    rmSync(dataDir, { recursive: true, force: true });
    changed();
    resolveExit(code);
  };
  let kill: () => void;
  if (on === 'terminal') {
    const pty = spawnPty(process.execPath, args, { cols: 200, rows: 50, cwd: root, env: fullEnv });
    pty.onData(append);
    pty.onExit(({ exitCode: code }) => onExit(code));
    kill = () => pty.kill('SIGTERM');
  } else {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: fullEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk: Buffer) => append(chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => append(chunk.toString('utf8')));
    child.on('close', onExit);
    kill = () => child.kill('SIGTERM');
  }
  const waitFor = (pattern: RegExp): Promise<void> =>
    new Promise((resolve, reject) => {
      const settle = (err?: Error): void => {
        clearTimeout(timer);
        waiters.delete(check);
        if (err === undefined) resolve();
        else reject(err);
      };
      const failure = (why: string): Error => new Error(`no ${String(pattern)} (${why}):\n${text}`);
      const check = (): void => {
        if (pattern.test(text)) settle();
        else if (exitCode !== undefined) settle(failure(`the broker exited with ${String(exitCode)}`));
      };
      const timer = setTimeout(() => settle(failure(`${CEILING_MS / 1000} s passed`)), CEILING_MS);
      waiters.add(check);
      check();
    });
  const stop = (): Promise<number | null> => {
    if (exitCode === undefined) kill();
    return exited;
  };
  return { output: () => text, waitFor, stop };
}
