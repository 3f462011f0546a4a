// An ensure waits as long as the broker lets a sandbox provision (2 min), not the 30 s of the
// other calls: a burst of cold starts on a small host is answered after more than 30 s
// (bench/first-command). A client's own timeoutMs still applies as set.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import { BrokerClient, ConflictError, TimeoutError } from '../src/index.js';

/** A broker stand-in that answers a negotiation 409 once `answerAfterMs` have passed. */
async function slowBroker(answerAfterMs: number) {
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    req.resume();
    held.push(res);
    setTimeout(() => {
      res.writeHead(409, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'CONFLICT', message: 'answered late', retryable: false } }));
    }, answerAfterMs).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      for (const res of held) res.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('negotiation timeout', () => {
  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it('waits past 30 s for an ensure by default and gets the answer', async () => {
    const broker = await slowBroker(31_000);
    closers.push(broker.close);
    const failure = await new BrokerClient({ baseUrl: broker.url, apiKey: 'k' })
      .ensure({ thread_id: 'thr_slow' })
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ConflictError);
    expect((failure as Error).message).toContain('answered late');
  }, 90_000);

  it("gives up at the client's own timeoutMs when one is set", async () => {
    const broker = await slowBroker(60_000);
    closers.push(broker.close);
    const failure = await new BrokerClient({ baseUrl: broker.url, apiKey: 'k', timeoutMs: 1000 })
      .ensure({ thread_id: 'thr_slow' })
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(TimeoutError);
    expect((failure as Error).message).toContain('no answer within 1000 ms');
  }, 90_000);
});
