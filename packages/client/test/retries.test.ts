import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  BrokerClient,
  ERROR_CLASSES,
  RateLimitedError,
  SbxClientError,
  SecurityError,
  UnauthenticatedError,
  clientError,
} from '../src/index.js';
import { SbxError, ERROR_CODES } from '@sbx/protocol';

const FAST_RETRY = { maxAttempts: 5, baseDelayMs: 5, maxDelayMs: 20 };
const servers: Server[] = [];

/** A broker stand-in answering each request with the next status of `statuses` (the last one repeats). */
async function scriptedServer(statuses: readonly number[], headers: Record<string, string> = {}) {
  const seen = { count: 0 };
  const server = createServer((_req, res) => {
    const status = statuses[Math.min(seen.count, statuses.length - 1)] ?? 500;
    seen.count++;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    if (status === 200)
      res.end(JSON.stringify({ lease_expires_at: '2030-01-01T00:00:00Z', state: 'active' }));
    else if (status === 204) res.end();
    else
      res.end(
        JSON.stringify({
          error: {
            code:
              status === 401
                ? 'UNAUTHENTICATED'
                : status === 403
                  ? 'FORBIDDEN'
                  : status === 429
                    ? 'RATE_LIMITED'
                    : 'BACKEND_UNAVAILABLE',
            message: 'scripted',
            retryable: status >= 429,
          },
        }),
      );
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen };
}

afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('retries', () => {
  it('does not retry a 401: one request, a SecurityError at once', async () => {
    const { url, seen } = await scriptedServer([401, 200]);
    const broker = new BrokerClient({ baseUrl: url, apiKey: 'k', retry: FAST_RETRY });
    const failure = await broker.heartbeat('sess_1').catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(UnauthenticatedError);
    expect(failure).toBeInstanceOf(SecurityError);
    expect(failure).toBeInstanceOf(SbxError);
    expect((failure as UnauthenticatedError).name).toBe('UnauthenticatedError');
    expect((failure as UnauthenticatedError).httpStatus).toBe(401);
    expect(seen.count).toBe(1);
  });

  it('does not retry a 403 either', async () => {
    const { url, seen } = await scriptedServer([403, 200]);
    const broker = new BrokerClient({ baseUrl: url, apiKey: 'k', retry: FAST_RETRY });
    await expect(broker.release('sess_1')).rejects.toBeInstanceOf(SecurityError);
    expect(seen.count).toBe(1);
  });

  it('retries a 503 until it succeeds', async () => {
    const { url, seen } = await scriptedServer([503, 503, 200]);
    const broker = new BrokerClient({ baseUrl: url, apiKey: 'k', retry: FAST_RETRY });
    const answer = await broker.heartbeat('sess_1');
    expect(answer.state).toBe('active');
    expect(seen.count).toBe(3);
  });

  it('gives up after maxAttempts and raises the typed error', async () => {
    const { url, seen } = await scriptedServer([429], { 'retry-after': '0' });
    const broker = new BrokerClient({ baseUrl: url, apiKey: 'k', retry: { ...FAST_RETRY, maxAttempts: 3 } });
    await expect(broker.heartbeat('sess_1')).rejects.toBeInstanceOf(RateLimitedError);
    expect(seen.count).toBe(3);
  });

  it('waits at least Retry-After seconds between attempts', async () => {
    const { url, seen } = await scriptedServer([429, 200], { 'retry-after': '1' });
    const broker = new BrokerClient({ baseUrl: url, apiKey: 'k', retry: FAST_RETRY });
    const started = Date.now();
    await broker.heartbeat('sess_1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(seen.count).toBe(2);
  });

  it('retries a refused connection, then raises a retryable transport error', async () => {
    const { url } = await scriptedServer([200]);
    await new Promise<void>((resolve) => servers.pop()?.close(() => resolve()));
    const broker = new BrokerClient({ baseUrl: url, apiKey: 'k', retry: { ...FAST_RETRY, maxAttempts: 2 } });
    const failure = await broker.heartbeat('sess_1').catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(SbxClientError);
    expect((failure as SbxClientError).code).toBe('BACKEND_UNAVAILABLE');
    expect((failure as SbxClientError).name).toBe('TransportError');
  });

  it('honours the call timeout across retries', async () => {
    const { url } = await scriptedServer([503]);
    const broker = new BrokerClient({
      baseUrl: url,
      apiKey: 'k',
      retry: { maxAttempts: 100, baseDelayMs: 50, maxDelayMs: 50 },
    });
    const failure = await broker.heartbeat('sess_1', { timeoutMs: 300 }).catch((err: unknown) => err);
    expect((failure as SbxClientError).code).toBe('TIMEOUT');
  });
});

describe('errors', () => {
  it('has one class per protocol code, each with its own name', () => {
    const names = new Set<string>();
    for (const code of ERROR_CODES) {
      const err = clientError(code, 'x');
      expect(err).toBeInstanceOf(ERROR_CLASSES[code]);
      expect(err.code).toBe(code);
      names.add(err.name);
    }
    expect(names.size).toBe(ERROR_CODES.length);
  });

  it('reads the environment only when options are absent', () => {
    const saved = { url: process.env['SBX_BROKER_URL'], key: process.env['SBX_API_KEY'] };
    delete process.env['SBX_BROKER_URL'];
    delete process.env['SBX_API_KEY'];
    try {
      expect(() => new BrokerClient()).toThrow(/SBX_BROKER_URL/);
      process.env['SBX_BROKER_URL'] = 'http://127.0.0.1:1';
      expect(() => new BrokerClient()).toThrow(/SBX_API_KEY/);
      process.env['SBX_API_KEY'] = 'k';
      expect(new BrokerClient()).toBeInstanceOf(BrokerClient);
    } finally {
      if (saved.url === undefined) delete process.env['SBX_BROKER_URL'];
      else process.env['SBX_BROKER_URL'] = saved.url;
      if (saved.key === undefined) delete process.env['SBX_API_KEY'];
      else process.env['SBX_API_KEY'] = saved.key;
    }
  });
});
