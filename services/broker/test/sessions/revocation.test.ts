// Revocation end to end through a real broker and real agents (the local provider): a
// released human's token is refused and their open shell closes 1008; POST
// /admin/revocations revokes one token, or a whole sandbox by rotating its key. Calls to
// the broker are retried as the SDK retries them: on a loaded host a sandbox may take
// longer to start than the provider waits, a retryable 503 the SDK sends again (each
// call for up to SDK_RETRY_CEILING_MS, hence the tests' 300 s).
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WebSocket } from 'ws';
import { RefreshTokenResponse, RevocationResponse, SessionResponse } from '@sbx/protocol';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { retryLikeSdk } from '../support/sdk-retry.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;
/** The target is 1 s (printed); the ceiling only keeps a broken build from hanging. */
const CEILING_MS = 30_000;

interface OpenShell {
  readonly closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

/** Opens `/v1/shell/ws`, authenticates with the first frame and starts a shell. */
async function openShell(session: SessionResponse): Promise<OpenShell> {
  const ws = new WebSocket(`${session.dataplane.ws_base_url}/v1/shell/ws`);
  ws.on('error', () => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
  );
  const ready = new Promise<void>((resolve, reject) => {
    ws.on('message', (data: Buffer) => {
      const frame: unknown = JSON.parse(data.toString('utf8'));
      if (typeof frame === 'object' && frame !== null && 'type' in frame) {
        if (frame.type === 'ready') resolve();
        if (frame.type === 'error') reject(new Error(data.toString('utf8')));
      }
    });
    void closed.then((c) => reject(new Error(`closed ${c.code} before ready`)));
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'auth', token: session.credentials.access_token }));
  ws.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
  await ready;
  return { closed, close: () => ws.close() };
}

async function closedWithin(shell: OpenShell): Promise<{ code: number; reason: string; ms: number }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const ceiling = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`shell still open after ${CEILING_MS} ms`)), CEILING_MS);
  });
  try {
    const closed = await Promise.race([shell.closed, ceiling]);
    return { ...closed, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

const jtiOf = (token: string): string => {
  const claims: unknown = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
  if (typeof claims !== 'object' || claims === null || !('jti' in claims) || typeof claims.jti !== 'string')
    throw new Error('no jti');
  return claims.jti;
};

describe(`revocation on real agents [${backend.name}]`, () => {
  const broker = useLocalBroker(backend, {
    isolation: 'none',
    settings: { provisioningWaitMs: 20_000 },
  });
  let orchestrator: string;
  let admin: string;

  beforeAll(async () => {
    orchestrator = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'],
    });
    admin = await broker.apiKey({ scopes: [...ALL_CALLER_SCOPES] });
  }, 60_000);

  const negotiate = async (scopeId: string, actor: { type: string; id: string }) => {
    // One key for the call and its retries, as the SDK sends it.
    const idempotencyKey = randomUUID();
    const res = await retryLikeSdk(() =>
      request(broker.url)
        .post('/v1/sandbox/sessions')
        .set(bearer(orchestrator))
        .set('idempotency-key', idempotencyKey)
        .send({ scope: { type: 'thread', id: scopeId }, mode: 'ensure', actor }),
    );
    expect(res.status).toBe(200);
    return SessionResponse.parse(res.body);
  };
  const info = async (session: SessionResponse, token = session.credentials.access_token) =>
    (
      await fetch(`${session.dataplane.http_base_url}/v1/info`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).status;
  const revoke = (body: object, key = admin) =>
    retryLikeSdk(() => request(broker.url).post('/admin/revocations').set(bearer(key)).send(body));

  it("a released human's token is refused at once and their open shell closes 1008", async () => {
    const thread = `thr_${randomUUID()}`;
    const human = await negotiate(thread, { type: 'human', id: 'usr_ann' });
    const agent = await negotiate(thread, { type: 'agent', id: 'agt_bob' });
    expect(agent.binding.sandbox_id).toBe(human.binding.sandbox_id);
    const shell = await openShell(human);
    expect(await info(human)).toBe(200);

    const released = await retryLikeSdk(() =>
      request(broker.url).delete(`/v1/sandbox/sessions/${human.binding.id}`).set(bearer(orchestrator)),
    );
    expect(released.status).toBe(204);
    expect(await info(human)).toBe(401);
    const closed = await closedWithin(shell);
    process.stdout.write(`released human's shell closed ${closed.ms} ms after the release answered\n`);
    expect(closed).toMatchObject({ code: 1008, reason: 'token was revoked' });
    expect(await info(agent)).toBe(200);
  }, 300_000);

  it('{jti} revokes that token only; {sandbox_id} every old one, and a new one works', async () => {
    const thread = `thr_${randomUUID()}`;
    const human = await negotiate(thread, { type: 'human', id: 'usr_cy' });
    const agent = await negotiate(thread, { type: 'agent', id: 'agt_dee' });
    const sandboxId = human.binding.sandbox_id;

    expect((await revoke({ jti: jtiOf(human.credentials.access_token) }, orchestrator)).status).toBe(403);
    const one = await revoke({ jti: jtiOf(human.credentials.access_token) });
    expect(one.status).toBe(200);
    expect(RevocationResponse.parse(one.body)).toEqual({
      sandbox_ids: [sandboxId],
      revoked_tokens: 1,
      key_rotated: false,
    });
    expect(await info(human)).toBe(401);
    expect(await info(agent)).toBe(200);

    const other = await negotiate(thread, { type: 'human', id: 'usr_eve' });
    const shell = await openShell(other);
    const all = await revoke({ sandbox_id: sandboxId });
    expect(all.status).toBe(200);
    expect(RevocationResponse.parse(all.body)).toMatchObject({ sandbox_ids: [sandboxId], key_rotated: true });
    expect(await info(agent)).toBe(401);
    expect(await info(other)).toBe(401);
    expect((await closedWithin(shell)).code).toBe(1008);

    const renewed = await retryLikeSdk(() =>
      request(broker.url)
        .post(`/v1/sandbox/sessions/${agent.binding.id}/refresh-token`)
        .set(bearer(orchestrator))
        .send({}),
    );
    expect(renewed.status).toBe(200);
    const fresh = RefreshTokenResponse.parse(renewed.body);
    expect(await info(agent, fresh.access_token)).toBe(200);
    const again = await negotiate(`thr_${randomUUID()}`, { type: 'human', id: 'usr_cy' });
    expect(await info(again)).toBe(200);

    expect((await revoke({ jti: 'tok_nope' })).status).toBe(404);
    expect((await revoke({ jti: 'a', sandbox_id: 'b' })).status).toBe(400);
    const audited = await broker.database.prisma.auditEvent.count({ where: { action: 'token.revoke' } });
    expect(audited).toBeGreaterThanOrEqual(4);
  }, 300_000);
});
