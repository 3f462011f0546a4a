import type { Shell } from '@sbx/client';

/** Output quiet this long after stdin ended: the shell is waiting for input. */
const QUIET_MS = 300;
const EOT = '\x04';

/**
 * Passes the end of a piped stdin (`echo ls | sbx shell t`) on to the shell. The remote
 * shell reads a terminal, where end of input is Ctrl-D (EOT) on an empty line; but an EOT
 * typed before the shell reads its line in raw mode (it is still starting, or a command
 * runs) is taken by the terminal driver and lost. So the EOT is sent once the shell has
 * gone quiet, and again after every later burst of output, until the shell exits.
 */
class PipedEnd {
  #ended = false;
  #outputSinceEot = true;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly write: (data: string) => void) {}

  /** Stdin ended; `midLine`: its last line had no newline, which is sent first. */
  ended(midLine: boolean): void {
    if (midLine) this.write('\n');
    this.#ended = true;
    this.#arm();
  }

  /** The shell printed something. */
  output(): void {
    this.#outputSinceEot = true;
    if (this.#ended) this.#arm();
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (!this.#outputSinceEot) return;
      this.#outputSinceEot = false;
      this.write(EOT);
    }, QUIET_MS);
  }
}

/** Wires the end of a piped `stdin` to the shell (see PipedEnd); returns the cleanup. */
export function passPipedEnd(
  stdin: NodeJS.ReadableStream,
  remote: Pick<Shell, 'write' | 'onData'>,
): () => void {
  const end = new PipedEnd((data) => remote.write(data));
  let lastByte: number | undefined;
  const onData = (chunk: Buffer): void => {
    lastByte = chunk.at(-1) ?? lastByte;
  };
  const onEnd = (): void => end.ended(lastByte !== undefined && lastByte !== 0x0a && lastByte !== 0x0d);
  stdin.on('data', onData);
  stdin.once('end', onEnd);
  const stopWatchingOutput = remote.onData(() => end.output());
  return () => {
    stdin.off('data', onData);
    stdin.off('end', onEnd);
    stopWatchingOutput();
    end.stop();
  };
}
