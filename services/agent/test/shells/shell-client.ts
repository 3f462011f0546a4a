import type { RawData } from 'ws';
import { TestSocket } from '../support/ws-client.js';

export interface StartOptions {
  readonly cols?: number;
  readonly rows?: number;
  readonly cwd?: string;
  readonly env?: Record<string, string>;
  readonly shell_session_id?: string;
}

export function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data instanceof ArrayBuffer ? new Uint8Array(data) : data).toString('utf8');
}

/**
 * A shell endpoint client: authenticates, starts or attaches, and collects the
 * decoded bytes of every stdout frame (utf8 or base64) for assertions.
 */
export class ShellClient {
  readonly chunks: Buffer[] = [];
  #waiters: Array<() => void> = [];

  private constructor(readonly socket: TestSocket) {
    socket.ws.on('message', (data: RawData) => {
      const frame = JSON.parse(rawText(data)) as { type?: string; data?: string; encoding?: string };
      if (frame.type === 'stdout' && typeof frame.data === 'string') {
        this.chunks.push(Buffer.from(frame.data, frame.encoding === 'base64' ? 'base64' : 'utf8'));
      }
      this.#wake();
    });
    socket.ws.on('close', () => this.#wake());
  }

  static async connect(url: string, token: string): Promise<ShellClient> {
    return new ShellClient(await TestSocket.authed(url, token));
  }

  /** Connects, sends `start` and waits for `ready`; resolves with the client and the shell id. */
  static async start(url: string, token: string, options: StartOptions = {}): Promise<ShellClient> {
    const client = await ShellClient.connect(url, token);
    client.send({ type: 'start', cols: options.cols ?? 80, rows: options.rows ?? 24, ...options });
    await client.socket.next((f) => f['type'] === 'ready' || f['type'] === 'error');
    return client;
  }

  get frames(): Array<Record<string, unknown>> {
    return this.socket.frames;
  }

  get shellId(): string {
    const ready = this.frames.find((f) => f['type'] === 'ready');
    if (typeof ready?.['shell_session_id'] !== 'string') throw new Error('no ready frame');
    return ready['shell_session_id'];
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }

  /** The output as lines of a screen would read: escape sequences and carriage returns removed. */
  plain(): string {
    return plainText(this.text());
  }

  send(frame: unknown): void {
    this.socket.send(frame);
  }

  type(line: string): void {
    this.send({ type: 'stdin', data: `${line}\n` });
  }

  /** Resolves with the plain output so far once `pattern` occurs in it (see `plain`). */
  async waitFor(pattern: string | RegExp, timeoutMs = 30_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = this.plain();
      if (typeof pattern === 'string' ? text.includes(pattern) : pattern.test(text)) return text;
      if (this.socket.ws.readyState === this.socket.ws.CLOSED) {
        throw new Error(
          `socket closed before ${String(pattern)}; output: ${JSON.stringify(text.slice(-2000))}`,
        );
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `timed out waiting for ${String(pattern)}; output: ${JSON.stringify(text.slice(-2000))}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async nextFrame(type: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    return this.socket.next((f) => f['type'] === type, timeoutMs);
  }

  close(): void {
    this.socket.close();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

// oxlint-disable-next-line no-control-regex -- terminal escape sequences are control characters
const ESCAPES = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\r/g;

export function plainText(text: string): string {
  return text.replace(ESCAPES, '');
}

/** Occurrences of `needle` in `text`. */
export function countOf(text: string, needle: string): number {
  return text.split(needle).length - 1;
}
