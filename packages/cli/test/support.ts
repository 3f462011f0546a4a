// Runs `sbx` as a real process (node bin/sbx.mjs) with its own SBX_HOME, against a real
// broker that the test process serves (so spawning must be asynchronous).
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const SBX_BIN = fileURLToPath(new URL('../bin/sbx.mjs', import.meta.url));
const run = promisify(execFile);

export interface SbxResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface SbxRunner {
  readonly home: string;
  sbx(args: readonly string[], options?: { readonly input?: string | Buffer }): Promise<SbxResult>;
  close(): void;
}

/** A CLI home in a fresh temp dir; `close` removes it. */
export function sbxRunner(): SbxRunner {
  const home = path.join(realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-cli-'))), 'home');
  return {
    home,
    sbx: (args, options = {}) => runSbx(home, args, options.input),
    close: () => rmSync(path.dirname(home), { recursive: true, force: true }),
  };
}

/** The environment of a spawned `sbx`: no inherited SBX_* so only SBX_HOME decides. */
export function sbxEnv(home: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SBX_')));
  return { ...env, SBX_HOME: home };
}

function runSbx(home: string, args: readonly string[], input?: string | Buffer): Promise<SbxResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SBX_BIN, ...args], { env: sbxEnv(home), stdio: 'pipe' });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        code: code ?? -1,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    child.stdin.end(input);
  });
}

/** A 127.0.0.1 port nothing listens on (bound, then closed). */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Logs `cli` in to `brokerUrl` with `apiKey` (on stdin), then runs `sbx ensure` for each thread. */
export async function logInAndEnsure(
  cli: SbxRunner,
  brokerUrl: string,
  apiKey: string,
  threads: readonly string[],
): Promise<void> {
  for (const args of [['login', '--broker', brokerUrl], ...threads.map((thread) => ['ensure', thread])]) {
    const result = await cli.sbx(args, { input: apiKey });
    if (result.code !== 0) throw new Error(`sbx ${args[0] ?? ''} failed: ${result.stderr}`);
  }
}

/** A tmux server of the test's own (its own socket), so nothing else's sessions are touched. */
export class Tmux {
  readonly socket = `sbx-cli-test-${process.pid}`;

  async cmd(...args: string[]): Promise<string> {
    const { stdout } = await run('tmux', ['-L', this.socket, ...args]);
    return stdout;
  }

  capture(target: string): Promise<string> {
    return this.cmd('capture-pane', '-p', '-J', '-S', '-200', '-t', target);
  }

  /** Polls the pane until `pattern` shows (generous deadline; loaded machines are slow). */
  async waitFor(target: string, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    let screen = '';
    while (Date.now() < deadline) {
      screen = await this.capture(target);
      const match = pattern.exec(screen);
      if (match !== null) return match;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`no ${String(pattern)} on the screen of ${target}:\n${screen}`);
  }

  /** Stops the server and removes its socket file (tmux leaves it behind). */
  async killServer(): Promise<void> {
    const socketPath = (await this.cmd('display-message', '-p', '#{socket_path}').catch(() => '')).trim();
    await this.cmd('kill-server').catch(() => undefined);
    if (socketPath !== '') rmSync(socketPath, { force: true });
  }
}
