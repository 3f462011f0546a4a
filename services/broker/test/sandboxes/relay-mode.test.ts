// Relay mode (DATAPLANE_RELAY=on, docs/sandboxes.md): session answers point at the broker's
// `/v1/sandboxes/{id}/dp`, and every data-plane route works there with the same token, HTTP
// and WebSocket alike. The broker checks the token itself, so a revocation is refused at
// the broker on the very next call; a caller's API key works too, within its caller scopes.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WebSocket } from 'ws';
import { ThreadSandboxResponse } from '@sbx/protocol';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;

describe(`relay mode [${backend.name}]`, () => {
  const broker = useLocalBroker(backend, {
    isolation: 'none',
    settings: { provisioningWaitMs: 20_000 },
    dataplaneRelay: true,
  });
  let user: string;
  let admin: string;
  let session: ThreadSandboxResponse;

  beforeAll(async () => {
    user = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'attach:sandbox'],
      principalType: 'user',
    });
    admin = await broker.apiKey({ scopes: ALL_CALLER_SCOPES });
    const opened = await request(broker.url)
      .post(`/threads/thr_${randomUUID()}/sandbox`)
      .set(bearer(user))
      .send({ scopes: ['fs:rw', 'shell'] });
    if (opened.status !== 200) throw new Error(`negotiation answered ${opened.status}`);
    session = ThreadSandboxResponse.parse(opened.body);
  }, 60_000);

  const dp = (path: string, credential: string, init: RequestInit = {}) =>
    fetch(`${session.endpoints.http}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${credential}`, ...(init.headers as Record<string, string>) },
    });

  it("hands out the broker's address, where the agent's routes answer with the same token", async () => {
    expect(session.endpoints.http).toBe(`${broker.url}/v1/sandboxes/${session.sandbox_id}/dp`);
    expect(session.endpoints.ws).toBe(
      `${broker.url.replace('http', 'ws')}/v1/sandboxes/${session.sandbox_id}/dp`,
    );
    const info = await dp('/v1/info', session.token);
    expect([info.status, ((await info.json()) as { sandbox_id: string }).sandbox_id]).toEqual([
      200,
      session.sandbox_id,
    ]);
    const up = await dp('/v1/files/upload?path=notes/a.txt', session.token, {
      method: 'POST',
      body: 'relayed hello',
    });
    expect(up.status).toBeLessThan(300);
    const down = await dp('/v1/files/download?path=notes/a.txt', session.token);
    expect(await down.text()).toBe('relayed hello');
    // The token has no `process`: the agent's own refusal comes back as it is.
    const exec = await dp('/v1/exec', session.token, {
      method: 'POST',
      body: JSON.stringify({ cmd: 'true' }),
      headers: { 'content-type': 'application/json' },
    });
    expect(exec.status).toBe(403);
    expect((await dp('/v1/no-such-route', session.token)).status).toBe(404);
  });

  it('relays a shell over the WebSocket route with the same token', async () => {
    const socket = new WebSocket(`${session.endpoints.ws}/v1/shell/ws`);
    let output = '';
    const closed = new Promise<number>((resolve) => socket.on('close', (code: number) => resolve(code)));
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) return;
      const frame = JSON.parse(data.toString('utf8')) as { type: string; data?: string };
      if (frame.type === 'ready')
        socket.send(JSON.stringify({ type: 'stdin', data: 'echo "relay-$((20 + 1))"; exit\n' }));
      if (frame.type === 'stdout') output += frame.data ?? '';
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    socket.send(JSON.stringify({ type: 'auth', token: session.token }));
    socket.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
    expect(await closed).toBe(1000);
    expect(output).toContain('relay-21');
  }, 60_000);

  it('takes an API key within its caller scopes', async () => {
    expect((await dp('/v1/info', user)).status).toBe(200);
    const exec = await dp('/v1/exec', user, {
      method: 'POST',
      body: JSON.stringify({ cmd: 'true' }),
      headers: { 'content-type': 'application/json' },
    });
    expect([exec.status, ((await exec.json()) as { error: { code: string } }).error.code]).toEqual([
      403,
      'FORBIDDEN',
    ]);
    const stranger = await broker.apiKey({ tenantId: `tenant_${randomUUID()}`, scopes: ['read:sandbox'] });
    expect((await dp('/v1/info', stranger)).status).toBe(404);
  });

  it('refuses a revoked token at the broker on the very next call', async () => {
    const extra = await request(broker.url)
      .post(`/threads/thr_${randomUUID()}/sandbox`)
      .set(bearer(user))
      .send({ scopes: ['fs:ro'] });
    const token = extra.body.token as string;
    const base = extra.body.endpoints.http as string;
    expect((await fetch(`${base}/v1/info`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
      200,
    );
    const jti = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).jti as string;
    const revoked = await request(broker.url).post('/admin/revocations').set(bearer(admin)).send({ jti });
    expect(revoked.status).toBe(200);
    const after = await fetch(`${base}/v1/info`, { headers: { authorization: `Bearer ${token}` } });
    expect(after.status).toBe(401);
    // The broker's own refusal, not the agent's (which learns of it through the pushed list).
    expect(((await after.json()) as { error: { message: string } }).error.message).toMatch(
      /refused: revoked/,
    );
  }, 60_000);
});
