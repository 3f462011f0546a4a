// HTTP answers cut off by the network: a download never comes back shorter than the file
// (a typed TransportError instead of undici's bare `TypeError: terminated`), and a call
// that may have run says so and is not sent again.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { TransportError } from '../src/index.js';
import { fixedTokens } from './fake-agent.js';
import { SandboxClient } from '../src/index.js';
import { rejectionOf } from './wait-for.js';

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** An agent stand-in: `handle` answers every request; `seen` counts them. */
async function stubAgent(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ client: SandboxClient; seen: { count: number } }> {
  const seen = { count: 0 };
  const server = createServer((req, res) => {
    seen.count++;
    handle(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = new SandboxClient({
    httpBaseUrl: `http://127.0.0.1:${port}`,
    wsBaseUrl: `ws://127.0.0.1:${port}`,
    tokens: fixedTokens(),
    retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 10 },
    timeoutMs: 10_000,
  });
  return { client, seen };
}

/** Promises 1000 bytes, sends 10, then drops the connection. */
function cutDownload(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '1000' });
  res.write(Buffer.alloc(10, 1), () => res.socket?.destroy());
}

describe('answers cut off mid-body', () => {
  it('files.read rejects with a TransportError, never a shorter file', async () => {
    const { client } = await stubAgent(cutDownload);
    const failure = await rejectionOf(client.files.read('big.bin'), 'read');
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.message).toMatch(
      /^read big\.bin: the connection was lost while the answer was read \(.+\); the request reached the server$/,
    );
  });

  it('files.readStream errors the stream with a TransportError after the bytes that came', async () => {
    const { client } = await stubAgent(cutDownload);
    const stream = await client.files.readStream('big.bin');
    let received = 0;
    const iterate = async (): Promise<void> => {
      for await (const chunk of stream) received += chunk.length;
    };
    const failure = await rejectionOf(iterate(), 'iterating the stream');
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.message).toMatch(/^read big\.bin: the connection was lost while the answer was read/);
    expect(received).toBe(10);
  });

  it('exec.run cut mid-answer: a TransportError that says the command reached the agent; sent once', async () => {
    const { client, seen } = await stubAgent((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"exit_code":0,', () => res.socket?.destroy());
    });
    const failure = await rejectionOf(client.exec.run({ cmd: 'echo once >> log' }), 'exec.run');
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.message).toMatch(
      /^exec: the connection was lost while the answer was read .*reached the server$/,
    );
    expect(seen.count).toBe(1);
  });

  it('exec.run whose connection fails before the answer: it may have run, so it is not retried', async () => {
    const { client, seen } = await stubAgent((req) => {
      req.resume();
      req.socket.destroy();
    });
    const failure = await rejectionOf(client.exec.run({ cmd: 'echo once >> log' }), 'exec.run');
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.message).toMatch(
      /^exec: the connection failed before the answer came .*may have reached the server and run, so it was not retried$/,
    );
    expect(seen.count).toBe(1);
  });
});
