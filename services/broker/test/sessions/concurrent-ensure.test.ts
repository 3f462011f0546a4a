// Atomic creation: any number of concurrent ensures for one scope, on one or
// two broker instances sharing a database, create exactly one sandbox (one
// provider.create) and all answer the same binding for the same actor.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { SessionResponse } from '@sbx/protocol';
import { FakeProvider } from '../../src/providers/fake-provider.js';
import {
  bearer,
  randomMasterKey,
  startBrokerHarness,
  type BrokerHarness,
} from '../support/broker-harness.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';

const CALLS = 100;

describeEachBackend('concurrent ensure', (backend) => {
  const db = useTestDatabase(backend);
  const provider = new FakeProvider({ delays: { create: 150 } });
  let first: BrokerHarness<FakeProvider>;
  let second: BrokerHarness<FakeProvider>;
  let key: string;

  beforeAll(async () => {
    const masterKey = randomMasterKey();
    // Two broker instances: separate apps, servers and coordination, one database and provider.
    first = await startBrokerHarness({ database: db(), provider, masterKey });
    second = await startBrokerHarness({ database: db(), provider, masterKey });
    key = await first.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox'],
      principalType: 'service',
    });
  });
  afterAll(async () => {
    await first.close();
    await second.close();
    await provider.close();
  });

  async function ensureConcurrently(threadId: string, brokers: readonly BrokerHarness<FakeProvider>[]) {
    const responses = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        request(brokers[i % brokers.length]!.url)
          .post('/v1/sandbox/sessions')
          .set(bearer(key))
          .send({ scope: { type: 'thread', id: threadId }, mode: 'ensure' }),
      ),
    );
    for (const res of responses) expect(res.status).toBe(200);
    return responses.map((res) => SessionResponse.parse(res.body));
  }

  async function expectOneSandbox(threadId: string, sessions: readonly SessionResponse[]) {
    const sandboxIds = new Set(sessions.map((s) => s.binding.sandbox_id));
    const bindingIds = new Set(sessions.map((s) => s.binding.id));
    expect(sandboxIds.size).toBe(1);
    expect(bindingIds.size).toBe(1);
    const [sandboxId] = [...sandboxIds];
    expect(provider.calls('create').filter((id) => id === sandboxId)).toHaveLength(1);
    const rows = await db().prisma.sandbox.findMany({ where: { scopeId: threadId } });
    expect(rows.map((row) => row.id)).toEqual([sandboxId]);
    const live = await db().prisma.sessionBinding.count({ where: { scopeId: threadId, live: true } });
    expect(live).toBe(1);
  }

  it(`${CALLS} concurrent ensures for one thread create one sandbox and share one binding`, async () => {
    const threadId = `thr_${randomUUID()}`;
    const createsBefore = provider.calls('create').length;
    const sessions = await ensureConcurrently(threadId, [first]);
    await expectOneSandbox(threadId, sessions);
    expect(provider.calls('create').length - createsBefore).toBe(1);
    // Every caller holds a token of its own for the one binding.
    expect(new Set(sessions.map((s) => s.token)).size).toBe(CALLS);
  }, 120_000);

  it(`${CALLS} concurrent ensures spread over two broker instances still create one sandbox`, async () => {
    const threadId = `thr_${randomUUID()}`;
    const createsBefore = provider.calls('create').length;
    const sessions = await ensureConcurrently(threadId, [first, second]);
    await expectOneSandbox(threadId, sessions);
    expect(provider.calls('create').length - createsBefore).toBe(1);
  }, 120_000);
});
