// A caller of the relay's WebSocket route: sends its own credential first (which the route
// consumes), then speaks the agent's protocol; records every frame and how the socket closed.
import { WebSocket } from 'ws';
import { CALLER_CREDENTIAL, type RelayServer } from './relay-harness.js';

export interface Frame {
  readonly type: string;
  readonly data?: string;
  readonly [key: string]: unknown;
}

export interface Caller {
  readonly socket: WebSocket;
  readonly frames: Frame[];
  /** Resolves when a frame `match` accepts arrives (or has arrived). */
  frame(match: (frame: Frame) => boolean, what: string): Promise<Frame>;
  send(frame: object): void;
  readonly closed: Promise<{ code: number; reason: string }>;
}

const CEILING_MS = 60_000;

export async function openCaller(relay: RelayServer, agentPath: string): Promise<Caller> {
  const socket = new WebSocket(`${relay.wsUrl}/ws${agentPath}`);
  const frames: Frame[] = [];
  const waiters = new Set<() => void>();
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    frames.push(
      isBinary
        ? { type: 'binary', data: data.toString('base64') }
        : (JSON.parse(data.toString('utf8')) as Frame),
    );
    for (const waiter of waiters) waiter();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code: number, reason: Buffer) => {
      resolve({ code, reason: reason.toString('utf8') });
      for (const waiter of waiters) waiter();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  socket.send(JSON.stringify({ type: 'auth', token: CALLER_CREDENTIAL }));
  return {
    socket,
    frames,
    send: (frame) => socket.send(JSON.stringify(frame)),
    closed,
    frame: (match, what) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const found = frames.find(match);
          if (found !== undefined) done(() => resolve(found));
          else if (socket.readyState === WebSocket.CLOSED)
            done(() => reject(new Error(`closed before ${what}: ${JSON.stringify(frames.slice(-3))}`)));
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`timed out waiting for ${what}`))),
          CEILING_MS,
        );
        const done = (settle: () => void): void => {
          clearTimeout(timer);
          waiters.delete(check);
          settle();
        };
        waiters.add(check);
        check();
      }),
  };
}

/** Resolves when `check` passes, looking again at each `event` of `emitter`-like callbacks. */
export function once<T>(subscribe: (fire: (value: T) => void) => void, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), CEILING_MS);
    subscribe((value) => {
      clearTimeout(timer);
      resolve(value);
    });
  });
}
