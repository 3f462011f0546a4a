// The broker's V8 heap, read from outside. The broker exports no process metrics (its
// /metrics registry holds only its own counters), so the suite starts it with
// `NODE_OPTIONS=--inspect=127.0.0.1:0` (a port of its own, loopback only) and asks through
// the DevTools protocol: a full collection first (HeapProfiler.collectGarbage), so that what
// is left is what the broker still holds, then process.memoryUsage() in its main context.
import { WebSocket } from 'ws';

/** What a broker needs in its environment for `readHeap`. */
export const INSPECT_ENV = { NODE_OPTIONS: '--inspect=127.0.0.1:0' } as const;

/** The inspector's address, from the line node prints on start ("Debugger listening on ws://…"). */
export function inspectorUrlOf(output: string): string {
  const url = /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
  if (url === undefined)
    throw new Error(`no inspector address in the broker's output:\n${output.slice(0, 2000)}`);
  return url;
}

export interface HeapReading {
  /** V8 heap in use after a full collection, bytes. */
  readonly heapUsed: number;
  readonly heapTotal: number;
  /** Memory of C++ objects bound to JS (Buffers among them), bytes. */
  readonly external: number;
  readonly rss: number;
}

const CALL_CEILING_MS = 60_000;

/** One reading: connect, collect garbage, read process.memoryUsage(), disconnect. */
export async function readHeap(url: string): Promise<HeapReading> {
  const socket = new WebSocket(url);
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  socket.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString('utf8')) as { id?: number; result?: unknown; error?: unknown };
    const waiter = message.id === undefined ? undefined : pending.get(message.id);
    if (waiter === undefined) return;
    pending.delete(message.id!);
    if (message.error === undefined) waiter.resolve(message.result);
    else waiter.reject(new Error(`inspector: ${JSON.stringify(message.error)}`));
  });
  const failAll = (err: Error): void => {
    for (const waiter of pending.values()) waiter.reject(err);
    pending.clear();
  };
  socket.on('error', failAll);
  socket.on('close', () => failAll(new Error('the inspector closed the connection')));
  const call = (method: string, params: Record<string, unknown> = {}): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => reject(new Error(`inspector: no answer to ${method}`)), CALL_CEILING_MS);
      pending.set(id, {
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    await call('HeapProfiler.collectGarbage');
    const answer = (await call('Runtime.evaluate', {
      expression: 'JSON.stringify(process.memoryUsage())',
      returnByValue: true,
    })) as { result?: { value?: unknown } };
    const value = answer.result?.value;
    if (typeof value !== 'string') throw new Error(`inspector: unexpected answer ${JSON.stringify(answer)}`);
    return JSON.parse(value) as HeapReading;
  } finally {
    socket.close();
  }
}
