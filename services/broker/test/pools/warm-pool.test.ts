// Warm pools (docs/warm-pools.md) on a real broker with the FAKE provider standing in
// for sandboxes (a real local pool is in warm-pool-local.test.ts): the pool fills, an
// ensure on a new thread claims a warm sandbox (no create on its path), the pool refills,
// concurrent ensures each get their own, a tenant the pool does not fit starts cold, the
// reconciler leaves warm sandboxes alone but clears a dead instance's, and a clean
// shutdown destroys them.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { reconcileAtStartup } from '../../src/domain/lifecycle/startup-reconcile.js';
import { SigningKey } from '@sbx/tokens';
import { createLogger } from '@sbx/service-kit';
import { bearer, type BrokerHarness } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { liftOwnerShare } from '../support/owner-share.js';
import type { FakeProvider } from '../../src/providers/fake-provider.js';
import { until } from '../process/broker-process.js';
import { ReaperRepository } from '../../src/store/reaper-repository.js';

const POOL = 6;

describeEachBackend('warm pool (fake provider)', (backend) => {
  const broker = useBroker(backend, {
    warmPoolSize: POOL,
    rateLimits: { perWindow: { negotiate: 10_000, session: 10_000 }, windowMs: 60_000 },
  });

  // Concurrent ensures of one owner take the whole pool: more than the default share.
  beforeAll(() => liftOwnerShare(broker.repositories, broker.tenantId));

  const warmIds = async (harness: Pick<BrokerHarness<FakeProvider>, 'repositories'> = broker) =>
    new Set((await harness.repositories.warmPool.listAll('fake')).map((row) => row.id));
  const full = () => until(async () => (await warmIds()).size === POOL, 'the pool to be full', 20);
  const ensure = async (key: string, thread = `thr_${randomUUID()}`) => {
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: thread, mode: 'ensure' });
    expect(res.status).toBe(200);
    return (res.body as { sandbox: { id: string } }).sandbox.id;
  };

  it('claims a warm sandbox for a new thread, hands it its tenant, and refills', async () => {
    await full();
    const before = await warmIds();
    const creates = broker.provider.calls('create').length;
    const key = await broker.apiKey({ scopes: ['write:sandbox'] });

    const id = await ensure(key);

    expect(before.has(id)).toBe(true);
    expect(broker.provider.claims.get(id)).toEqual({ tenantId: broker.tenantId, environment: {} });
    const row = await broker.repositories.sandboxes.findById(id, { tenantId: broker.tenantId });
    expect(row?.state).toBe('active');
    const audit = await broker.repositories.audit.listBySandbox(id);
    expect(audit.map((event) => event.action)).toContain('sandbox.claimed');
    await full();
    expect(broker.provider.calls('create').length).toBe(creates + 1); // the refill, not the ensure
  });

  it('gives each of concurrent ensures on new threads its own warm sandbox', async () => {
    await full();
    const before = await warmIds();
    const key = await broker.apiKey({ scopes: ['write:sandbox'] });
    const ids = await Promise.all(Array.from({ length: POOL }, () => ensure(key)));
    expect(new Set(ids).size).toBe(POOL);
    expect(ids.every((id) => before.has(id))).toBe(true);
  });

  it("refuses a claim over the tenant's running-sandbox limit and keeps the pool", async () => {
    const tenantId = `tenant_${randomUUID()}`;
    await broker.repositories.policies.upsertTenantPolicy(tenantId, { maxSandboxes: 1 });
    const key = await broker.apiKey({ scopes: ['write:sandbox'], tenantId });
    await full();
    const initial = await warmIds();
    const first = await ensure(key);
    expect(initial.has(first)).toBe(true); // within the limit: claimed from the pool
    expect((await broker.repositories.sandboxes.findById(first, { tenantId }))?.state).toBe('active');
    await full();
    const before = await warmIds();
    expect(before.has(first)).toBe(false);

    const over = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' });

    expect(over.status).toBe(403);
    expect(over.body.error.message).toContain("tenant's limit");
    expect(await warmIds()).toEqual(before);
  });

  it('starts an internal-only tenant cold: the pool is on the default-public network', async () => {
    await full();
    const tenantId = `tenant_${randomUUID()}`;
    await broker.repositories.policies.upsertTenantPolicy(tenantId, { environment: 'internal_only' });
    const key = await broker.apiKey({ scopes: ['write:sandbox'], tenantId });
    const id = await ensure(key);
    expect((await warmIds()).has(id)).toBe(false);
    expect(broker.provider.specOf(id)?.network).toBe('off');
    expect(broker.provider.claims.has(id)).toBe(false);
  });

  it("keeps its warm sandboxes through a reconciler round, clears a dead instance's", async () => {
    await full();
    const deadId = `sbx_${randomUUID()}`;
    await broker.provider.create({
      sandboxId: deadId,
      tenantId: 'sbx-warm-pool',
      signingKey: SigningKey.generate(),
      tokenIssuer: 'sbx-broker',
      network: 'on',
    });
    await broker.repositories.warmPool.add({
      id: deadId,
      provider: 'fake',
      template: 'default',
      environment: 'default_public',
      hostInstance: `brk_dead_${randomUUID()}`,
      providerRef: null,
      httpBaseUrl: 'http://dead.invalid',
      wsBaseUrl: 'ws://dead.invalid',
      workspacePath: '/workspace',
      signingKeyCipher: new Uint8Array(32),
    });
    const mine = await warmIds();
    mine.delete(deadId);

    const report = await reconcileAtStartup({
      repository: new ReaperRepository(broker.database.prisma),
      provider: broker.provider,
      coordination: broker.coordination,
      clock: Date.now,
      logger: createLogger({ service: 'warm-pool-test', level: 'silent' }),
      presence: { instanceId: 'brk_this_test', isAlive: async (id) => !id.startsWith('brk_dead_') },
      warm: broker.repositories.warmPool,
    });

    expect(report.orphansDestroyed).toEqual([deadId]);
    expect(await broker.provider.status(deadId)).toBe('missing');
    for (const id of mine) expect(await broker.provider.status(id)).toBe('running');
  });

  // Found by reliability/load/ensure-race.test.ts: a warm sandbox has no row while it is made,
  // and the reconciler destroyed it as an orphan; its row was written all the same, and an
  // ensure then claimed a sandbox without an agent.
  it('leaves a warm sandbox being made to its pool while the reconciler sweeps', async () => {
    await full();
    const key = await broker.apiKey({ scopes: ['write:sandbox'] });
    const creates = broker.provider.calls('create').length;
    const release = broker.provider.hold('create');
    let making = '';
    let report: Awaited<ReturnType<typeof reconcileAtStartup>> | undefined;
    try {
      await ensure(key); // claims one: the refill's create is held
      await until(() => broker.provider.calls('create').length > creates, 'the refill to make one', 20);
      making = broker.provider.calls('create').at(-1)!;
      const sweeping = reconcileAtStartup({
        repository: new ReaperRepository(broker.database.prisma),
        provider: broker.provider,
        coordination: broker.coordination,
        clock: Date.now,
        logger: createLogger({ service: 'warm-pool-test', level: 'silent' }),
        presence: { instanceId: 'brk_this_test', isAlive: async () => true },
        warm: broker.repositories.warmPool,
      });
      let ended = false;
      void sweeping.finally(() => (ended = true)).catch(() => undefined);
      // Either the sweep ends, or it waits to destroy the sandbox behind its held create.
      await until(
        () => ended || broker.provider.calls('destroy').includes(making),
        'the sweep to end or to destroy the sandbox being made',
        20,
      );
      release();
      report = await sweeping;
    } finally {
      release();
    }
    expect(report.orphansDestroyed).toEqual([]);
    await full();
    expect((await warmIds()).has(making)).toBe(true);
    for (const id of await warmIds()) expect(await broker.provider.status(id)).toBe('running');
  });

  it('destroys its warm sandboxes when the broker shuts down', async () => {
    // Instances share their coordination store (Redis in production): each sees the other alive.
    const other = await broker.instance({ warmPoolSize: 2, coordination: broker.coordination });
    await until(async () => (await warmIds(other)).size >= POOL + 2, 'the second pool to fill', 20);
    const all = await warmIds(other);
    await other.close();
    const left = await warmIds();
    const gone = [...all].filter((id) => !left.has(id));
    expect(gone).toHaveLength(2);
    for (const id of gone) expect(await broker.provider.status(id)).toBe('missing');
  });
});
