// The relay's routes verify credentials themselves (the /dp HTTP routes and the sandbox
// sockets, whose first frame carries the credential): they count refused ones against the
// client address like every other route, so guessing keys there is limited too, while a
// valid key from that address is still served.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WebSocket } from 'ws';
import { DEFAULT_AUTH_FAILURE_LIMITS } from '../../src/domain/rate-limit/auth-failure-limiter.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;
const LIMIT = DEFAULT_AUTH_FAILURE_LIMITS.maxFailures;
const guess = () => `sbk_guess_${randomUUID().replaceAll('-', '')}`;

/** The first frame the broker answers a socket authenticating with `credential`. */
function socketAnswer(url: string, credential: string): Promise<{ code?: string }> {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/sandboxes/sb_missing/sessions/new`);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no answer on the socket')), 60_000);
    socket.on('error', reject);
    socket.on('open', () => socket.send(JSON.stringify({ type: 'auth', token: credential })));
    socket.on('message', (data: Buffer) => {
      clearTimeout(timer);
      const frame = JSON.parse(data.toString('utf8')) as { error?: { code?: string } };
      socket.close();
      resolve(frame.error?.code === undefined ? {} : { code: frame.error.code });
    });
  });
}

describe(`failed credentials on the relay's own routes [${backend.name}]`, () => {
  const broker = useBroker(backend, { dataplaneRelay: true });

  it(`answers 429 on /dp past ${LIMIT} wrong keys, and still serves a valid one`, async () => {
    const dp = (credential: string) =>
      request(broker.url).get('/v1/sandboxes/sb_missing/dp/files/a.txt').set(bearer(credential));
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 1; i++) statuses.push((await dp(guess())).status);
    expect(statuses).toEqual([...Array.from({ length: LIMIT }, () => 401), 429]);
    // A valid key is checked and gets past authentication: this sandbox is simply not its.
    const valid = await broker.apiKey({ scopes: ['read:sandbox'] });
    expect((await dp(valid)).status).toBe(404);
    // A socket from the same address: a wrong key is limited there too, a valid one is not.
    expect(await socketAnswer(broker.url, guess())).toEqual({ code: 'RATE_LIMITED' });
    const attach = await broker.apiKey({ scopes: ['attach:sandbox'] });
    expect(await socketAnswer(broker.url, attach)).toEqual({ code: 'SANDBOX_NOT_FOUND' });
  });
});
