// What clients see of a start-up reconciliation, through the HTTP API, with the
// FAKE provider (its agents "die" by a `stop` behind the database's back): a
// suspended sandbox is resumed by the next ensure or session read instead of
// being answered with its dead address, and it no longer counts against the
// tenant's quota of running sandboxes.
import { randomUUID } from 'node:crypto';
import { expect, it } from '@jest/globals';
import request from 'supertest';
import { GetBindingResponse, SessionResponse } from '@sbx/protocol';
import { createLogger } from '@sbx/service-kit';
import { reconcileAtStartup } from '../../src/domain/lifecycle/startup-reconcile.js';
import { ReaperRepository } from '../../src/store/reaper-repository.js';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

describeEachBackend('sessions after a start-up reconciliation (fake provider)', (backend) => {
  const broker = useBroker(backend);
  const db = () => broker.database;

  const keyFor = (tenantId = broker.tenantId) =>
    broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user', tenantId });
  const ensure = async (key: string, threadId: string) =>
    request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: threadId, mode: 'ensure' });
  const opened = async (key: string, threadId: string) => {
    const res = await ensure(key, threadId);
    expect(res.status).toBe(200);
    return SessionResponse.parse(res.body);
  };
  const reconcile = () =>
    reconcileAtStartup({
      repository: new ReaperRepository(db().prisma),
      provider: broker.provider,
      coordination: broker.coordination,
      clock: Date.now,
      logger: createLogger({ service: 'reconciled-sessions-test', level: 'silent' }),
    });
  /** What a broker restart leaves: the agent is gone, its row still says where it listened. */
  const agentDies = (session: SessionResponse) => broker.provider.stop(session.binding.sandbox_id);

  it('resumes a reconciled sandbox on ensure and on a session read, with its new dataplane', async () => {
    const key = await keyFor();
    const [read, ensured] = [
      await opened(key, `thr_${randomUUID()}`),
      await opened(key, `thr_${randomUUID()}`),
    ];
    for (const session of [read, ensured]) await agentDies(session);
    await reconcile();

    const got = await request(broker.url).get(`/v1/sandbox/sessions/${read.session_id}`).set(bearer(key));
    expect(got.status).toBe(200);
    const body = GetBindingResponse.parse(got.body);
    expect(body.binding).toMatchObject({ id: read.session_id, state: 'active' });
    expect(body.dataplane.http_base_url).not.toBe(read.dataplane.http_base_url);

    const again = await opened(key, ensured.binding.scope.id);
    expect(again.binding).toMatchObject({ id: ensured.session_id, state: 'active' });
    expect(again.dataplane.http_base_url).not.toBe(ensured.dataplane.http_base_url);
    for (const session of [read, ensured])
      expect(await broker.provider.status(session.binding.sandbox_id)).toBe('running');
  });

  it("frees the tenant's quota: suspended sandboxes do not count, resuming one is checked like a creation", async () => {
    const tenantId = `tenant_${randomUUID()}`;
    const key = await keyFor(tenantId);
    await broker.repositories.policies.upsertTenantPolicy(tenantId, { maxSandboxes: 1 });
    const first = await opened(key, `thr_${randomUUID()}`);
    await agentDies(first);
    const second = `thr_${randomUUID()}`;
    // Still recorded active: it holds the tenant's only slot.
    expect((await ensure(key, second)).status).toBe(403);

    await reconcile();
    const created = await opened(key, second);
    // Resuming the first would run two agents.
    const refused = await ensure(key, first.binding.scope.id);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('limit');

    expect(
      (await request(broker.url).delete(`/v1/sandbox/sessions/${created.session_id}`).set(bearer(key)))
        .status,
    ).toBe(204);
    const resumed = await opened(key, first.binding.scope.id);
    expect(resumed.binding).toMatchObject({ sandbox_id: first.binding.sandbox_id, state: 'active' });
  });
});
