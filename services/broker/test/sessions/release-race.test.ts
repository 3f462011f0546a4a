// Releasing the last binding races an attach by another actor: whichever
// wins, the attaching actor ends up on a live sandbox, and no live binding is
// ever left on a sandbox that ended (the sandbox row lock serializes them).
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { SessionResponse } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const ROUNDS = 15;

describeEachBackend('release racing attach', (backend) => {
  const broker = useBroker(backend);
  const db = () => broker.database;
  let key: string;

  beforeAll(async () => {
    key = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox'],
      principalType: 'service',
    });
  });

  const ensure = (threadId: string, actor: object) =>
    request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ scope: { type: 'thread', id: threadId }, mode: 'ensure', actor });

  it(`keeps every attach on a live sandbox over ${ROUNDS} races`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const threadId = `thr_${randomUUID()}`;
      const human = SessionResponse.parse((await ensure(threadId, { type: 'human', id: 'usr_h' })).body);
      const [released, attached] = await Promise.all([
        request(broker.url).delete(`/v1/sandbox/sessions/${human.session_id}`).set(bearer(key)),
        ensure(threadId, { type: 'agent', id: 'agt_a' }),
      ]);
      expect(released.status).toBe(204);
      expect(attached.status).toBe(200);
      const agent = SessionResponse.parse(attached.body);
      const sandbox = await db().prisma.sandbox.findUniqueOrThrow({
        where: { id: agent.binding.sandbox_id },
      });
      expect(sandbox).toMatchObject({ state: 'active', live: true });
      expect(await broker.provider.status(sandbox.id)).toBe('running');
      // Leave nothing live behind (the tenant's sandbox quota counts live ones).
      await request(broker.url)
        .delete(`/v1/sandbox/sessions/${agent.session_id}`)
        .set(bearer(key))
        .expect(204);
    }
    const orphans = await db().prisma.sessionBinding.count({
      where: { live: true, sandbox: { live: null }, tenantId: broker.tenantId },
    });
    expect(orphans).toBe(0);
  }, 60_000);
});
