// Opaque-token mode end to end (docs/architecture.md D20): a real broker with
// TOKEN_FORMAT=opaque and the local provider, whose agents check tokens through the
// broker's POST /oauth/introspect. An opaque token works on HTTP and a shell WebSocket;
// a released binding's token is refused within ~1 s and its shell closes 1008.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WebSocket } from 'ws';
import { SessionResponse } from '@sbx/protocol';
import { OPAQUE_TOKEN_PREFIX } from '@sbx/tokens';
import type { LocalProvider } from '../../src/providers/local-provider.js';
import { startLocalKit, type LocalKit } from '../providers/local-provider-kit.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;
const CEILING_MS = 5000;

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const ceiling = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, ceiling]).finally(() => clearTimeout(timer));
}

/** A shell socket authenticated with the session's token, once `ready`; `closed` resolves on close. */
async function openShell(session: SessionResponse) {
  const ws = new WebSocket(`${session.dataplane.ws_base_url}/v1/shell/ws`);
  ws.on('error', () => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
  );
  const ready = new Promise<void>((resolve, reject) => {
    ws.on('message', (data: Buffer) => {
      const text = data.toString('utf8');
      if (text.includes('"type":"ready"')) resolve();
      if (text.includes('"type":"error"')) reject(new Error(text));
    });
    void closed.then((c) => reject(new Error(`closed ${c.code} ${c.reason}`)));
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'auth', token: session.token }));
  ws.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
  await within(ready, 10_000);
  return { closed, close: () => ws.close() };
}

describe(`opaque tokens through a real broker and local agents [${backend.name}]`, () => {
  let kit: LocalKit | undefined;
  let introspectionUrl: string | undefined;
  const broker = useBroker<LocalProvider>(backend, {
    provider: async (onAgentExit) =>
      (kit = await startLocalKit({
        isolation: 'none',
        onAgentExit,
        agentIntrospectionUrl: () => introspectionUrl,
      })).provider,
    settings: { provisioningWaitMs: 20_000, tokenFormat: 'opaque' },
  });
  let orchestrator: string;

  beforeAll(async () => {
    introspectionUrl = `${broker.url}/oauth/introspect`;
    orchestrator = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox', 'attach:sandbox'] });
  }, 60_000);
  afterAll(async () => {
    await kit?.dispose();
  });

  const negotiate = async (thread: string, actor: { type: string; id: string }) => {
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(orchestrator))
      .send({ scope: { type: 'thread', id: thread }, mode: 'ensure', actor });
    expect(res.status).toBe(200);
    return SessionResponse.parse(res.body);
  };
  const info = async (session: SessionResponse) =>
    (
      await fetch(`${session.dataplane.http_base_url}/v1/info`, {
        headers: { authorization: `Bearer ${session.token}` },
      })
    ).status;

  it('an opaque token works on HTTP and a shell; release refuses it within ~1 s', async () => {
    const thread = `thr_${randomUUID()}`;
    const human = await negotiate(thread, { type: 'human', id: 'usr_ann' });
    const agent = await negotiate(thread, { type: 'agent', id: 'agt_bob' });
    expect(human.token.startsWith(OPAQUE_TOKEN_PREFIX)).toBe(true);
    expect(await info(human)).toBe(200);
    const shell = await openShell(human);
    const released = await request(broker.url)
      .delete(`/v1/sandbox/sessions/${human.binding.id}`)
      .set(bearer(orchestrator));
    expect(released.status).toBe(204);
    const started = Date.now();
    const refused = async (): Promise<number> => {
      for (;;) {
        const status = await info(human);
        if (status !== 200) return status;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    expect(await within(refused(), CEILING_MS)).toBe(401);
    const closed = await within(shell.closed, CEILING_MS);
    process.stdout.write(
      `released opaque token refused, shell closed ${Date.now() - started} ms after release\n`,
    );
    expect(closed.code).toBe(1008);
    expect(await info(agent)).toBe(200);
  }, 60_000);

  const exchange = (form: Record<string, string>) =>
    request(broker.url)
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', ...form });
  const OPAQUE_TYPE = 'urn:sbx:params:oauth:token-type:capability';

  it('exchanges an opaque subject token for a narrower opaque one, never a wider or longer one', async () => {
    const session = await negotiate(`thr_${randomUUID()}`, { type: 'human', id: 'usr_cy' });
    const narrowed = await exchange({
      subject_token: session.token,
      subject_token_type: OPAQUE_TYPE,
      scope: 'fs:ro',
    });
    expect(narrowed.status).toBe(200);
    const child = narrowed.body as { access_token: string; scope: string; expires_in: number };
    expect(child.access_token.startsWith(OPAQUE_TOKEN_PREFIX)).toBe(true);
    expect(child.scope).toBe('fs:ro');
    const readOnly = { ...session, token: child.access_token };
    expect(await info(readOnly)).toBe(200);
    const upload = await fetch(`${session.dataplane.http_base_url}/v1/files/upload?path=x.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${child.access_token}` },
      body: 'no',
    });
    expect(upload.status).toBe(403);
    const wider = await exchange({
      subject_token: child.access_token,
      subject_token_type: OPAQUE_TYPE,
      scope: 'fs:rw',
    });
    expect([wider.status, wider.body.error]).toEqual([400, 'invalid_scope']);
    const longer = await exchange({
      subject_token: child.access_token,
      subject_token_type: OPAQUE_TYPE,
      expires_in: '86400',
    });
    expect(longer.status).toBe(400);
    const unknown = await exchange({
      subject_token: `${OPAQUE_TOKEN_PREFIX}${'A'.repeat(43)}`,
      subject_token_type: OPAQUE_TYPE,
    });
    expect([unknown.status, unknown.body.error]).toEqual([400, 'invalid_request']);
    const asJwt = await exchange({
      subject_token: session.token,
      subject_token_type: OPAQUE_TYPE,
      requested_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    });
    expect([asJwt.status, asJwt.body.error]).toEqual([400, 'invalid_request']);
  }, 60_000);

  it('refreshes a thread token with an opaque current_token as proof of possession', async () => {
    const thread = `thr_${randomUUID()}`;
    const key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
    const opened = await request(broker.url)
      .post(`/threads/${thread}/sandbox`)
      .set(bearer(key))
      .send({ scopes: ['fs:rw'] });
    expect(opened.status).toBe(200);
    const first = opened.body as { sandbox_id: string; token: string };
    expect(first.token.startsWith(OPAQUE_TOKEN_PREFIX)).toBe(true);
    const refreshed = await request(broker.url)
      .post(`/threads/${thread}/sandbox/refresh`)
      .set(bearer(key))
      .send({ sandbox_id: first.sandbox_id, current_token: first.token });
    expect(refreshed.status).toBe(200);
    expect((refreshed.body as { token: string }).token.startsWith(OPAQUE_TOKEN_PREFIX)).toBe(true);
    const forged = await request(broker.url)
      .post(`/threads/${thread}/sandbox/refresh`)
      .set(bearer(key))
      .send({ sandbox_id: first.sandbox_id, current_token: `${OPAQUE_TOKEN_PREFIX}${'B'.repeat(43)}` });
    expect(forged.status).toBe(401);
  }, 60_000);
});
