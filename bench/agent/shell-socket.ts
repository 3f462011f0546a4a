import { WebSocket, type RawData } from 'ws';

interface ServerFrame {
  readonly type?: string;
  readonly data?: string;
  readonly encoding?: string;
  readonly code?: number;
  readonly error?: { readonly message?: string };
}

export type OutputMode = 'binary' | 'json';

function textOf(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  // ws hands text messages over as Buffers: decode in place rather than copy first.
  return (Buffer.isBuffer(data) ? data : Buffer.from(data)).toString('utf8');
}

/**
 * A client of the agent's shell endpoint (`/v1/shell/ws`) that counts output bytes
 * instead of keeping them: authenticates and starts a shell, types, waits for the exit.
 */
export class ShellSocket {
  /** Output bytes received so far (characters of text frames: see the message handler). */
  stdoutBytes = 0;
  /** Output messages received so far (binary messages or `stdout` frames). */
  outputFrames = 0;
  exitCode: number | undefined;
  readonly #ws: WebSocket;
  readonly #closed: Promise<void>;
  readonly #ready: Promise<void>;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    this.#closed = new Promise((resolve) => ws.once('close', () => resolve()));
    this.#ready = new Promise((resolve, reject) => {
      ws.once('close', (code, reason) =>
        reject(new Error(`shell socket closed (${code} ${textOf(reason)})`)),
      );
      ws.on('message', (data: RawData, isBinary: boolean) => {
        if (isBinary) {
          this.outputFrames += 1;
          this.stdoutBytes += Array.isArray(data) ? Buffer.concat(data).length : data.byteLength;
          return;
        }
        const frame = JSON.parse(textOf(data)) as ServerFrame;
        if (frame.type === 'stdout' && frame.data !== undefined) {
          this.outputFrames += 1;
          // A terminal takes the text as it is; measuring its UTF-8 length would be the bench's
          // own cost, so text counts in characters (bytes for the ASCII the benchmarks print).
          this.stdoutBytes +=
            frame.encoding === 'base64' ? Buffer.byteLength(frame.data, 'base64') : frame.data.length;
        } else if (frame.type === 'ready') resolve();
        else if (frame.type === 'exit') this.exitCode = frame.code;
        else if (frame.type === 'error') reject(new Error(`shell endpoint: ${frame.error?.message ?? '?'}`));
      });
    });
    this.#ready.catch(() => undefined);
    ws.on('error', () => undefined);
  }

  /**
   * Connects, authenticates and starts a new shell; resolves once it is `ready`. `binary`:
   * raw output as binary messages, what a terminal client (the sbx CLI) asks for; `json`:
   * the protocol's default `stdout` frames, what a client that sends no `output` gets.
   */
  static async start(wsUrl: string, token: string, output: OutputMode = 'binary'): Promise<ShellSocket> {
    const ws = new WebSocket(`${wsUrl}/v1/shell/ws`);
    const socket = new ShellSocket(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ type: 'auth', token }));
    const start = { type: 'start', cols: 80, rows: 24 };
    ws.send(JSON.stringify(output === 'binary' ? { ...start, output } : start));
    await socket.#ready;
    return socket;
  }

  type(line: string): void {
    this.#ws.send(JSON.stringify({ type: 'stdin', data: `${line}\n` }));
  }

  /** Resolves once the agent has sent the exit and closed the socket. */
  async closed(): Promise<void> {
    await this.#closed;
  }

  /** Ends the shell (the agent hangs it up) and waits for the socket to close. */
  async end(): Promise<void> {
    if (this.#ws.readyState === WebSocket.OPEN) this.#ws.send(JSON.stringify({ type: 'close' }));
    await this.#closed;
  }
}
