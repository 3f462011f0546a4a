import { constants } from 'node:os';
import type { ExecStream } from '@sbx/client';

type OutputSource = Pick<ExecStream, 'pauseOutput' | 'resumeOutput'>;
type ForwardedSignal = 'SIGINT' | 'SIGTERM';

/** After the first Ctrl-C or SIGTERM, how long the command gets to end before sbx stops waiting. */
export const SIGNAL_GRACE_MS = 5_000;
/**
 * A SIGTERM this soon after the first is the same one delivered twice: `kill -TERM -<pgid>`
 * reaches this process and bin/sbx.mjs, which forwards it. (Ctrl-C is never forwarded.)
 */
const SAME_SIGNAL_MS = 1_000;

/**
 * Output written only as fast as the terminal or pipe takes it. When a write is refused
 * (`sbx exec … | slow-reader`), the socket is not read until that stream drains: TCP then
 * pushes back on the agent, which pauses the program's output at its own high-water mark.
 * Otherwise the output would pile up in this process's memory without bound.
 */
export class OutputFlow {
  #source: OutputSource | undefined;
  readonly #waiting = new Set<NodeJS.WritableStream>();

  /** The stream, once `exec.stream` resolved (output may arrive before). */
  attach(source: OutputSource): void {
    this.#source = source;
    if (this.#waiting.size > 0) source.pauseOutput();
  }

  write(out: NodeJS.WritableStream, data: Buffer): void {
    if (out.write(data) || this.#waiting.has(out)) return;
    this.#waiting.add(out);
    this.#source?.pauseOutput();
    out.once('drain', () => {
      this.#waiting.delete(out);
      if (this.#waiting.size === 0) this.#source?.resumeOutput();
    });
  }
}

export interface ForwardedSignals {
  /** Resolves with 128 + n once sbx gave up on the command: a second signal, or the grace period over. */
  readonly gaveUp: Promise<number>;
  stop(): void;
}

/**
 * Ctrl-C and SIGTERM go to the command. A command that ignores them, or a connection that
 * died, must not leave sbx stuck: a second signal, or SIGNAL_GRACE_MS without an exit,
 * closes the socket (the agent ends a program whose socket closed) and gives up.
 */
export function forwardSignals(run: ExecStream): ForwardedSignals {
  let first: { readonly signal: ForwardedSignal; readonly at: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let giveUp: ((signal: ForwardedSignal) => void) | undefined;
  const gaveUp = new Promise<number>((resolve) => {
    giveUp = (signal) => {
      clearTimeout(timer);
      run.abandon();
      resolve(128 + constants.signals[signal]);
    };
  });
  const handlers = {
    SIGINT: () => onSignal('SIGINT'),
    SIGTERM: () => onSignal('SIGTERM'),
  };
  const onSignal = (signal: ForwardedSignal): void => {
    if (first === undefined) {
      first = { signal, at: Date.now() };
      run.kill(signal);
      timer = setTimeout(() => giveUp?.(signal), SIGNAL_GRACE_MS);
      return;
    }
    const duplicate =
      signal === 'SIGTERM' && first.signal === 'SIGTERM' && Date.now() - first.at < SAME_SIGNAL_MS;
    if (!duplicate) giveUp?.(signal);
  };
  process.on('SIGINT', handlers.SIGINT);
  process.on('SIGTERM', handlers.SIGTERM);
  return {
    gaveUp,
    stop: () => {
      clearTimeout(timer);
      process.off('SIGINT', handlers.SIGINT);
      process.off('SIGTERM', handlers.SIGTERM);
    },
  };
}
