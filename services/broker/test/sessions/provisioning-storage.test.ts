// A sandbox host whose disk cannot hold a workspace refuses it with 507 INSUFFICIENT_STORAGE
// (the local provider's disk budget, or its files failing with ENOSPC): the caller hears
// that, not a retryable 503 with Retry-After, on a create and on a resume alike. Found by
// reliability/disk/host-full.test.ts (finding D1).
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { SbxError, SessionResponse } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { liftOwnerShare } from '../support/owner-share.js';

const noRoom = (): SbxError =>
  new SbxError('INSUFFICIENT_STORAGE', 'not enough disk for a workspace of 1024 bytes: it needs 1024 bytes');

describeEachBackend('provisioning on a full disk', (backend) => {
  const broker = useBroker(backend);
  let key: string;

  beforeAll(async () => {
    await liftOwnerShare(broker.repositories, broker.tenantId);
    key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
  });

  const ensure = (threadId: string) =>
    request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: threadId, mode: 'ensure' });

  it("answers a create the provider's disk cannot hold with 507, and frees the thread", async () => {
    const threadId = `thr_${randomUUID()}`;
    broker.provider.failNext('create', noRoom());
    const refused = await ensure(threadId);
    expect(refused.status).toBe(507);
    expect(refused.body.error).toMatchObject({
      code: 'INSUFFICIENT_STORAGE',
      retryable: false,
      message: expect.stringMatching(/^not enough disk for a workspace/),
    });
    expect(refused.headers['retry-after']).toBeUndefined();
    const rows = await broker.database.prisma.sandbox.findMany({ where: { scopeId: threadId } });
    expect(rows.map((row) => [row.state, row.live])).toEqual([['failed', null]]);
    expect((await ensure(threadId)).status).toBe(200);
  });

  it('answers a resume the disk cannot hold with 507 too', async () => {
    const threadId = `thr_${randomUUID()}`;
    const session = SessionResponse.parse((await ensure(threadId)).body);
    const sandboxId = session.binding.sandbox_id;
    await broker.provider.stop(sandboxId);
    await broker.repositories.sandboxes.transition(sandboxId, 'suspended');
    broker.provider.failNext('start', noRoom());
    const refused = await ensure(threadId);
    expect([refused.status, refused.body.error?.code]).toEqual([507, 'INSUFFICIENT_STORAGE']);
    // Once there is room, the same sandbox resumes.
    const resumed = SessionResponse.parse((await ensure(threadId)).body);
    expect(resumed.binding).toMatchObject({ sandbox_id: sandboxId, state: 'active' });
  });
});
