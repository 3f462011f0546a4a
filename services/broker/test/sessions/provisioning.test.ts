// What clients see while a provider works or fails: 503 PROVIDER_UNAVAILABLE
// with the scope freed for a retry, 423 SANDBOX_STARTING with Retry-After while
// someone else's sandbox is still coming up, and suspended sandboxes resumed.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { HeartbeatResponse, SessionResponse } from '@sbx/protocol';
import { sandboxLockKey } from '../../src/domain/lifecycle/sandbox-lock.js';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { liftOwnerShare } from '../support/owner-share.js';

describeEachBackend('provisioning', (backend) => {
  const broker = useBroker(backend, { settings: { provisioningWaitMs: 300 } });
  const db = () => broker.database;
  let key: string;

  beforeAll(async () => {
    await liftOwnerShare(broker.repositories, broker.tenantId); // one owner, many threads
    key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
  });

  const ensure = (threadId: string) =>
    request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: threadId, mode: 'ensure' });

  it('answers 503 when the provider fails, frees the thread, and a later ensure succeeds', async () => {
    const threadId = `thr_${randomUUID()}`;
    broker.provider.failNext('create');
    const failed = await ensure(threadId);
    expect(failed.status).toBe(503);
    expect(failed.body.error).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', retryable: true });
    expect(failed.headers['retry-after']).toBeDefined();
    const rows = await db().prisma.sandbox.findMany({ where: { scopeId: threadId } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      state: 'failed',
      live: null,
      failureReason: expect.stringContaining('injected'),
    });
    const orphans = await db().prisma.sessionBinding.count({ where: { scopeId: threadId, live: true } });
    expect(orphans).toBe(0);

    const retried = await ensure(threadId);
    expect(retried.status).toBe(200);
    expect(SessionResponse.parse(retried.body).binding.sandbox_id).not.toBe(rows[0]!.id);
  });

  it('answers 423 with Retry-After while another request is still creating the sandbox', async () => {
    const threadId = `thr_${randomUUID()}`;
    const release = broker.provider.hold('create');
    const first = ensure(threadId).then((res) => res); // starts the creation, held by the gate
    try {
      await waitFor(async () => (await db().prisma.sandbox.count({ where: { scopeId: threadId } })) === 1);
      const waiting = await ensure(threadId);
      expect(waiting.status).toBe(423);
      expect(waiting.body.error).toMatchObject({ code: 'SANDBOX_STARTING', retryable: true });
      expect(waiting.headers['retry-after']).toBe('2');
    } finally {
      release();
    }
    const created = await first;
    expect(created.status).toBe(200);
    const again = await ensure(threadId);
    expect(again.body.session_id).toBe(created.body.session_id);
  });

  it('waiters on a creation that fails get 503 too', async () => {
    const threadId = `thr_${randomUUID()}`;
    const release = broker.provider.hold('create');
    broker.provider.failNext('create');
    const first = ensure(threadId).then((res) => res);
    await waitFor(async () => (await db().prisma.sandbox.count({ where: { scopeId: threadId } })) === 1);
    const waiter = ensure(threadId).then((res) => res);
    setTimeout(release, 100);
    expect((await first).status).toBe(503);
    expect((await waiter).status).toBe(503);
  });

  it('resumes a suspended sandbox on attach, with its new dataplane', async () => {
    const threadId = `thr_${randomUUID()}`;
    const session = SessionResponse.parse((await ensure(threadId)).body);
    const sandboxId = session.binding.sandbox_id;
    await broker.provider.stop(sandboxId);
    await broker.repositories.sandboxes.transition(sandboxId, 'suspended');
    const startsBefore = broker.provider.calls('start').length;

    const resumed = SessionResponse.parse((await ensure(threadId)).body);
    expect(resumed.binding).toMatchObject({ id: session.binding.id, sandbox_id: sandboxId, state: 'active' });
    expect(broker.provider.calls('start').length - startsBefore).toBe(1);
    expect(await broker.provider.status(sandboxId)).toBe('running');
    expect(resumed.dataplane.http_base_url).not.toBe(session.dataplane.http_base_url);
    const actions = (await broker.repositories.audit.listBySandbox(sandboxId)).map((event) => event.action);
    expect(actions).toContain('sandbox.resumed');
  });

  it("waits for the reaper's lock on a suspended sandbox: 423 while held, resumed once free", async () => {
    const threadId = `thr_${randomUUID()}`;
    const session = SessionResponse.parse((await ensure(threadId)).body);
    const sandboxId = session.binding.sandbox_id;
    await broker.provider.stop(sandboxId);
    await broker.repositories.sandboxes.transition(sandboxId, 'suspended');
    const reaperLock = await broker.coordination.acquireLock(sandboxLockKey(sandboxId), 60_000);
    expect(reaperLock).not.toBeNull();
    const blocked = await ensure(threadId);
    expect(blocked.status).toBe(423);
    expect(blocked.headers['retry-after']).toBe('2');
    expect(await broker.provider.status(sandboxId)).toBe('stopped');
    await reaperLock!.release();
    const resumed = await ensure(threadId);
    expect(resumed.status).toBe(200);
    expect(await broker.provider.status(sandboxId)).toBe('running');
  });

  it('reactivates an idle sandbox on heartbeat', async () => {
    const session = SessionResponse.parse((await ensure(`thr_${randomUUID()}`)).body);
    await broker.repositories.sandboxes.transition(session.binding.sandbox_id, 'idle');
    const beat = await request(broker.url)
      .post(`/v1/sandbox/sessions/${session.session_id}/heartbeat`)
      .set(bearer(key))
      .send({});
    expect(beat.status).toBe(200);
    expect(beat.body.state).toBe('active');
    const row = await db().prisma.sandbox.findUniqueOrThrow({ where: { id: session.binding.sandbox_id } });
    expect(row.state).toBe('active');
  });

  it('does not resume a suspended sandbox past its hard TTL on heartbeat: 410, the agent stays down', async () => {
    const session = SessionResponse.parse((await ensure(`thr_${randomUUID()}`)).body);
    const sandboxId = session.binding.sandbox_id;
    await broker.provider.stop(sandboxId);
    await broker.repositories.sandboxes.transition(sandboxId, 'suspended');
    await db().prisma.sandbox.update({
      where: { id: sandboxId },
      data: { hardExpiresAt: new Date(Date.now() - 1000) },
    });
    const startsBefore = broker.provider.calls('start').length;
    const beat = await request(broker.url)
      .post(`/v1/sandbox/sessions/${session.session_id}/heartbeat`)
      .set(bearer(key))
      .send({});
    expect(beat.status).toBe(410);
    expect(broker.provider.calls('start').length).toBe(startsBefore);
    expect(await broker.provider.status(sandboxId)).toBe('stopped');
  });

  it('resumes a suspended sandbox on heartbeat and answers its new dataplane', async () => {
    const threadId = `thr_${randomUUID()}`;
    const session = SessionResponse.parse((await ensure(threadId)).body);
    const sandboxId = session.binding.sandbox_id;
    await broker.provider.stop(sandboxId);
    await broker.repositories.sandboxes.transition(sandboxId, 'suspended');
    const beat = await request(broker.url)
      .post(`/v1/sandbox/sessions/${session.session_id}/heartbeat`)
      .set(bearer(key))
      .send({});
    expect(beat.status).toBe(200);
    const body = HeartbeatResponse.parse(beat.body);
    expect(body.state).toBe('active');
    expect(await broker.provider.status(sandboxId)).toBe('running');
    expect(body.dataplane).toBeDefined();
    expect(body.dataplane?.http_base_url).not.toBe(session.dataplane.http_base_url);
    const threadBeat = await request(broker.url)
      .post(`/threads/${threadId}/sandbox/heartbeat`)
      .set(bearer(key))
      .send({ sandbox_id: sandboxId });
    expect(threadBeat.status).toBe(200);
    expect(threadBeat.body.endpoints).toEqual({
      http: body.dataplane?.http_base_url,
      ws: body.dataplane?.ws_base_url,
    });
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
