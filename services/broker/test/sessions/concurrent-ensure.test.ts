// Atomic creation: any number of concurrent ensures for one scope, on one or
// two broker instances sharing a database, create exactly one sandbox (one
// provider.create) and all answer the same binding for the same actor.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { SessionResponse } from '@sbx/protocol';
import { FakeProvider } from '../../src/providers/fake-provider.js';
import { bearer, type BrokerHarness } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const CALLS = 100;

describeEachBackend('concurrent ensure', (backend) => {
  const first = useBroker(backend, {
    provider: (onAgentExit) => new FakeProvider({ delays: { create: 150 }, onAgentExit }),
  });
  const db = () => first.database;
  const provider = () => first.provider;
  let second: BrokerHarness<FakeProvider>;
  let key: string;

  beforeAll(async () => {
    // Two broker instances: separate apps, servers and coordination, one database, provider and master key.
    second = await first.instance();
    key = await first.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox'],
      principalType: 'service',
    });
  });

  async function ensureConcurrently(threadId: string, brokers: readonly { readonly url: string }[]) {
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
    expect(
      provider()
        .calls('create')
        .filter((id) => id === sandboxId),
    ).toHaveLength(1);
    const rows = await db().prisma.sandbox.findMany({ where: { scopeId: threadId } });
    expect(rows.map((row) => row.id)).toEqual([sandboxId]);
    const live = await db().prisma.sessionBinding.count({ where: { scopeId: threadId, live: true } });
    expect(live).toBe(1);
  }

  it(`${CALLS} concurrent ensures for one thread create one sandbox and share one binding`, async () => {
    const threadId = `thr_${randomUUID()}`;
    const createsBefore = provider().calls('create').length;
    const sessions = await ensureConcurrently(threadId, [first]);
    await expectOneSandbox(threadId, sessions);
    expect(provider().calls('create').length - createsBefore).toBe(1);
    // Every caller holds a token of its own for the one binding.
    expect(new Set(sessions.map((s) => s.token)).size).toBe(CALLS);
  }, 120_000);

  it(`${CALLS} concurrent ensures spread over two broker instances still create one sandbox`, async () => {
    const threadId = `thr_${randomUUID()}`;
    const createsBefore = provider().calls('create').length;
    const sessions = await ensureConcurrently(threadId, [first, second]);
    await expectOneSandbox(threadId, sessions);
    expect(provider().calls('create').length - createsBefore).toBe(1);
  }, 120_000);
});
