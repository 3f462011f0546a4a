// Starting an agent is CPU work (a node process loading its code, a bubblewrap namespace, the
// first health probe), and a start's deadline runs from its spawn. A burst of cold creates
// started every agent at once: on a 2-core host 100 of them shared the CPU so thinly that
// half missed the 15 s deadline and the burst got 46 errors (bench/first-command). Starts
// beyond the gate's width wait their turn before their deadline starts; they all succeed,
// and the first ones are up sooner.
import { availableParallelism } from 'node:os';

/** Two starts per core keep the CPU busy while one waits on I/O (its probe, its disk). */
export function defaultConcurrentStarts(): number {
  return Math.max(2, 2 * availableParallelism());
}

export class StartGate {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly width: number) {
    if (!Number.isInteger(width) || width < 1) throw new RangeError(`start gate width ${width}`);
  }

  /** Starts waiting for a turn now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Runs `start` once fewer than `width` others run; turns go in the order asked. */
  async run<T>(start: () => Promise<T>): Promise<T> {
    if (this.#running < this.width) this.#running += 1;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await start();
    } finally {
      // The turn passes straight to the next in line, so a newcomer never overtakes it.
      const next = this.#waiting.shift();
      if (next === undefined) this.#running -= 1;
      else next();
    }
  }
}
