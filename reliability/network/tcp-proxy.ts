// A TCP proxy the test controls, between a client and an agent: every byte is forwarded
// as it comes until the test breaks the network.
//
//  - cut(): every connection now open is destroyed at once, both ways (a reset), as when a
//    NAT entry, a load balancer or a Wi-Fi link goes away; new connections are accepted.
//  - down(): cut(), and new connections are reset as soon as they are accepted, until up().
//  - blackhole(): a partition. Every connection, open or new, stays open but nothing moves:
//    reading stops both ways (so TCP pushes back on each sender) and writes are held, until
//    up() lets the held bytes through. Nobody is told anything: only a peer that expects an
//    answer can notice.
import net from 'node:net';

export type ProxyState = 'up' | 'down' | 'blackhole';

export interface TcpProxy {
  readonly port: number;
  readonly state: ProxyState;
  /** Connections accepted so far (each reconnect is one). */
  readonly accepted: number;
  /** Connections open now. */
  readonly open: number;
  cut(): void;
  /** cut() once `bytes` more have gone from the agent to the client (mid-output); resolves then. */
  cutAfter(bytes: number): Promise<void>;
  /** blackhole() once `bytes` more have gone from the agent to the client; resolves then. */
  blackholeAfter(bytes: number): Promise<void>;
  down(): void;
  blackhole(): void;
  up(): void;
  close(): Promise<void>;
}

interface Pair {
  readonly client: net.Socket;
  readonly upstream: net.Socket;
  held: boolean;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let state: ProxyState = 'up';
  let accepted = 0;
  const pairs = new Set<Pair>();
  let tripwire: { left: number; fire: () => void } | undefined;

  const hold = (pair: Pair): void => {
    if (pair.held) return;
    pair.held = true;
    for (const socket of [pair.client, pair.upstream]) {
      socket.pause();
      socket.cork();
    }
  };
  const release = (pair: Pair): void => {
    if (!pair.held) return;
    pair.held = false;
    for (const socket of [pair.client, pair.upstream]) {
      socket.uncork();
      socket.resume();
    }
  };
  const destroy = (pair: Pair): void => {
    pairs.delete(pair);
    pair.client.resetAndDestroy();
    pair.upstream.resetAndDestroy();
  };
  const cut = (): void => {
    for (const pair of pairs) destroy(pair);
  };
  const blackhole = (): void => {
    state = 'blackhole';
    for (const pair of pairs) hold(pair);
  };
  /** Runs `action` in the very callback that forwards the `bytes`-th byte, so no byte more passes. */
  const after = (bytes: number, action: () => void): Promise<void> =>
    new Promise((resolve) => {
      tripwire = {
        left: bytes,
        fire: () => {
          tripwire = undefined;
          action();
          resolve();
        },
      };
    });

  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    accepted++;
    if (state === 'down') {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect({ host: target.host, port: target.port, allowHalfOpen: true });
    const pair: Pair = { client, upstream, held: false };
    pairs.add(pair);
    forward(pair, client, upstream);
    forward(pair, upstream, client, (bytes) => {
      if (tripwire === undefined) return;
      tripwire.left -= bytes;
      if (tripwire.left <= 0) tripwire.fire();
    });
    for (const socket of [client, upstream]) {
      socket.on('error', () => destroy(pair));
      socket.on('close', () => destroy(pair));
    }
    if (state === 'blackhole') hold(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');

  return {
    port: address.port,
    get state() {
      return state;
    },
    get accepted() {
      return accepted;
    },
    get open() {
      return pairs.size;
    },
    cut,
    cutAfter: (bytes) => after(bytes, cut),
    blackholeAfter: (bytes) => after(bytes, blackhole),
    down() {
      state = 'down';
      cut();
    },
    blackhole,
    up() {
      state = 'up';
      for (const pair of pairs) release(pair);
    },
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Bytes from `from` to `to` with backpressure; a half-close is passed on. */
function forward(pair: Pair, from: net.Socket, to: net.Socket, onForwarded?: (bytes: number) => void): void {
  from.on('data', (data: Buffer) => {
    const flowing = to.write(data);
    onForwarded?.(data.length);
    if (flowing || pair.held || to.destroyed) return;
    from.pause();
    to.once('drain', () => {
      if (!pair.held) from.resume();
    });
  });
  from.on('end', () => to.end());
}
