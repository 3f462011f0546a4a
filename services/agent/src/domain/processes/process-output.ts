import type { ExitStatus } from '../exec/exit-status.js';
import type { OutputStream } from '../exec/process-group.js';
import { ByteRingBuffer } from './ring-buffer.js';

/** Someone reading a process's output as it arrives (e.g. a `follow=true` request). */
export interface OutputFollower {
  onOutput(stream: OutputStream, chunk: Buffer): void;
  onExit(status: ExitStatus): void;
}

/**
 * A background process's output: the newest bytes of each stream in a ring buffer
 * (older bytes are dropped and counted), plus live followers.
 */
export class ProcessOutput {
  readonly stdout: ByteRingBuffer;
  readonly stderr: ByteRingBuffer;
  readonly #followers = new Set<OutputFollower>();
  #status: ExitStatus | undefined;

  constructor(bufferBytes: number) {
    this.stdout = new ByteRingBuffer(bufferBytes);
    this.stderr = new ByteRingBuffer(bufferBytes);
  }

  buffer(stream: OutputStream): ByteRingBuffer {
    return stream === 'stdout' ? this.stdout : this.stderr;
  }

  append(stream: OutputStream, chunk: Buffer): void {
    this.buffer(stream).write(chunk);
    for (const follower of this.#followers) follower.onOutput(stream, chunk);
  }

  finish(status: ExitStatus): void {
    this.#status = status;
    const followers = [...this.#followers];
    this.#followers.clear();
    for (const follower of followers) follower.onExit(status);
  }

  get status(): ExitStatus | undefined {
    return this.#status;
  }

  /**
   * Registers `follower` for what comes next (call right after reading the buffers, in
   * the same tick, so nothing falls between). Already exited: `onExit` runs at once.
   */
  follow(follower: OutputFollower): () => void {
    if (this.#status !== undefined) {
      follower.onExit(this.#status);
      return () => undefined;
    }
    this.#followers.add(follower);
    return () => this.#followers.delete(follower);
  }
}
