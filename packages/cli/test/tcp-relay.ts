// A TCP relay on 127.0.0.1 that can go down (connections cut, new ones refused) and come
// back on the same port, or freeze (connections stay open, nothing passes): a broker or an
// agent behind a network outage, or a connection that died without a word.
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpRelay {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  readonly #pairs: [Socket, Socket][] = [];

  private constructor(
    private readonly target: { readonly host: string; readonly port: number },
    public port = 0,
  ) {}

  static async start(target: URL): Promise<TcpRelay> {
    const relay = new TcpRelay({ host: target.hostname, port: Number(target.port) });
    await relay.up();
    return relay;
  }

  /** `url` with its host and port replaced by the relay's. */
  via(url: string): string {
    const relayed = new URL(url);
    relayed.host = `127.0.0.1:${this.port}`;
    const text = relayed.toString();
    return url.endsWith('/') ? text : text.replace(/\/$/, '');
  }

  /** Listens again (on the same port after the first time). */
  async up(): Promise<void> {
    const server = createServer((client) => this.#relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('relay not listening');
    this.port = address.port;
    this.#server = server;
  }

  /** Cuts every connection and refuses new ones. */
  async down(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Lets nothing more through on the open connections (new ones still relay). */
  freeze(): void {
    for (const [client, upstream] of this.#pairs.splice(0)) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  #relay(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
    this.#pairs.push([client, upstream]);
  }
}
