// `sbx sync … --watch` as a long-running process whose output a test waits on: each wait
// ends on the output itself (checked at every chunk), not on a polling tick or a sleep.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { SBX_BIN, sbxEnv } from './support.js';

type Stream = 'stdout' | 'stderr';

/** Long enough for a loaded CI machine; only a watch that never prints the line waits it out. */
const WAIT_CEILING_MS = 90_000;

export interface WatchProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<number | null>;
  output(stream: Stream): string;
  /** Resolves once `pattern` is in the stream; rejects when the process ends or the ceiling passes. */
  waitFor(stream: Stream, pattern: RegExp): Promise<void>;
}

export function startWatch(home: string, args: readonly string[]): WatchProcess {
  const child = spawn(process.execPath, [SBX_BIN, 'sync', ...args, '--watch'], { env: sbxEnv(home) });
  const text = { stdout: '', stderr: '' };
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', (chunk: Buffer) => {
    text.stdout += chunk.toString('utf8');
    notify();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    text.stderr += chunk.toString('utf8');
    notify();
  });
  let closed = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      closed = true;
      notify();
      resolve(code);
    }),
  );
  const waitFor = (stream: Stream, pattern: RegExp): Promise<void> =>
    new Promise((resolve, reject) => {
      const settle = (err?: Error): void => {
        clearTimeout(timer);
        listeners.delete(check);
        if (err === undefined) resolve();
        else reject(err);
      };
      const failure = (why: string): Error =>
        new Error(`no ${String(pattern)} on ${stream} (${why}):\n${text.stdout}\n${text.stderr}`);
      const check = (): void => {
        if (pattern.test(text[stream])) settle();
        else if (closed) settle(failure('the watch ended'));
      };
      const timer = setTimeout(() => settle(failure(`${WAIT_CEILING_MS / 1000} s passed`)), WAIT_CEILING_MS);
      listeners.add(check);
      check();
    });
  return { child, exited, output: (stream) => text[stream], waitFor };
}
