import { WebSocket } from 'ws';

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

/** A WebSocket test client that records every frame and the close, with awaitable helpers. */
export class TestSocket {
  readonly frames: Array<Record<string, unknown>> = [];
  readonly ws: WebSocket;
  readonly closed: Promise<Closed>;
  private waiters: Array<() => void> = [];

  private constructor(ws: WebSocket) {
    this.ws = ws;
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString('utf8') });
        this.notify();
      });
    });
    ws.on('error', () => {});
    ws.on('message', (data: Buffer) => {
      this.frames.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>);
      this.notify();
    });
  }

  static async open(url: string): Promise<TestSocket> {
    const ws = new WebSocket(url);
    const socket = new TestSocket(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return socket;
  }

  /** Opens and authenticates; resolves after `auth_ok`. */
  static async authed(url: string, token: string): Promise<TestSocket> {
    const socket = await TestSocket.open(url);
    socket.send({ type: 'auth', token });
    await socket.next((f) => f['type'] === 'auth_ok' || f['type'] === 'error');
    return socket;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves with the first recorded frame matching `match` (already received or future). */
  async next(
    match: (frame: Record<string, unknown>) => boolean,
    timeoutMs = 10_000,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(match);
      if (found !== undefined) return found;
      if (this.ws.readyState === WebSocket.CLOSED)
        throw new Error(`socket closed before the expected frame; got ${JSON.stringify(this.frames)}`);
      const remaining = deadline - Date.now();
      if (remaining <= 0)
        throw new Error(`timed out waiting for a frame; got ${JSON.stringify(this.frames)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.ws.close();
  }
}
