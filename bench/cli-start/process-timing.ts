/**
 * Wall time of one short-lived process, from spawn to the moment that counts: its exit (a
 * command), or the first line it writes on stdout (a server's answer). Each run is its own
 * process group, tracked so that nothing outlives the bench.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnTracked, stopTracked } from '../lib/resources.js';

export interface Run {
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /** Written to stdin at spawn (a JSON-RPC request); stdin is closed after the first stdout line. */
  readonly input?: string;
}

const TIMEOUT_MS = 30_000;

function failure(child: ChildProcess, what: string, stderr: string): Error {
  return new Error(`${what} (pid ${String(child.pid)}): ${stderr.trim().slice(0, 400)}`);
}

export interface Timed {
  readonly ns: number;
  /** What the process wrote on stdout until then (the first line, for `timeToFirstLine`). */
  readonly stdout: string;
}

/** Nanoseconds from spawn to exit; the process must exit 0. */
export function timeToExit(run: Run): Promise<Timed> {
  return timed(run, 'exit');
}

/** Nanoseconds from spawn to the first complete stdout line; the process is then ended through its stdin. */
export function timeToFirstLine(run: Run): Promise<Timed> {
  return timed(run, 'line');
}

function timed(run: Run, until: 'exit' | 'line'): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawnTracked(run.command, run.args, { env: run.env ?? process.env, stdio: 'pipe' });
    let stderr = '';
    let out = '';
    let answeredAt: number | undefined;
    const timer = setTimeout(() => {
      void stopTracked(child, 0);
      reject(failure(child, `no ${until} within ${TIMEOUT_MS} ms`, stderr));
    }, TIMEOUT_MS);
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.stdout?.on('data', (chunk: Buffer) => {
      if (answeredAt !== undefined) return;
      out += chunk.toString('utf8');
      if (until !== 'line' || !out.includes('\n')) return;
      answeredAt = Number(process.hrtime.bigint() - started);
      child.stdin?.end(); // an MCP server ends when its host closes stdin
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const ns = Number(process.hrtime.bigint() - started);
      if (until === 'line' && answeredAt === undefined)
        reject(failure(child, `exited (${code ?? signal}) without a line`, stderr));
      else if (until === 'exit' && code !== 0) reject(failure(child, `exited ${code ?? signal}`, stderr));
      else resolve({ ns: answeredAt ?? ns, stdout: out });
    });
    if (run.input === undefined) child.stdin?.end();
    else child.stdin?.write(run.input);
  });
}
