// A thread whose sandbox broke while in use (its agent died and was not restarted) is not
// handed a new, empty sandbox unasked: ensure and `get` answer 409 naming the
// failed sandbox, its state, its failure and how to start over; deleting the failed
// sandbox (its owner asking) frees the thread. A sandbox that failed before it ever
// served (provisioning) leaves the thread free, as before. (docs/lifecycle.md, "Agent crashes")
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { MvpSessionResponse } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { until } from '../support/until.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.available)!; // Postgres when the machine has it

describe(`a thread whose sandbox failed in use [${backend.name}]`, () => {
  const broker = useBroker(backend, { loops: false });
  let user: string;
  beforeAll(async () => {
    user = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox'],
      principalType: 'user',
      principalId: `usr_${randomUUID()}`,
    });
  });

  const api = () => request(broker.url);
  const negotiate = (threadId: string, mode: 'ensure' | 'get') =>
    api().post('/v1/sandbox/sessions').set(bearer(user)).send({ thread_id: threadId, mode });
  const stateOf = async (id: string) =>
    (await broker.database.prisma.sandbox.findUniqueOrThrow({ where: { id } })).state;

  it('refuses a new sandbox until the failed one is deleted, then starts over', async () => {
    const thread = `thr_${randomUUID()}`;
    const first = MvpSessionResponse.parse((await negotiate(thread, 'ensure')).body);
    const sandboxId = first.sandbox.id;
    broker.provider.crash(sandboxId, 137); // an agent exit with no restart: failed
    await until(async () => (await stateOf(sandboxId)) === 'failed', 'the exit to be recorded');

    for (const mode of ['ensure', 'get'] as const) {
      const refused = await negotiate(thread, mode);
      expect([mode, refused.status]).toEqual([mode, 409]);
      expect(refused.body.error).toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining(
          `thread ${thread}'s sandbox ${sandboxId} is failed (the sandbox agent exited with code 137)`,
        ),
        details: {
          sandbox_id: sandboxId,
          state: 'failed',
          reason: 'agent_exit',
          failure_reason: 'the sandbox agent exited with code 137',
        },
      });
      expect(refused.body.error.message).toContain(`(DELETE /v1/sandboxes/${sandboxId}) to start over`);
    }
    expect(await broker.database.prisma.sandbox.count({ where: { scopeId: thread } })).toBe(1);
    const inspected = await api().get(`/v1/sandbox/sessions/${first.session_id}`).set(bearer(user));
    expect(inspected.status).toBe(410);
    expect(inspected.body.error.details).toMatchObject({
      sandbox_state: 'failed',
      failure_reason: 'the sandbox agent exited with code 137',
    });

    const deleted = await api().delete(`/v1/sandboxes/${sandboxId}`).set(bearer(user));
    expect(deleted.status).toBe(204);
    expect(await stateOf(sandboxId)).toBe('terminated');
    expect(broker.provider.calls('destroy')).toContain(sandboxId);
    const fresh = await negotiate(thread, 'ensure');
    expect(fresh.status).toBe(200);
    expect(MvpSessionResponse.parse(fresh.body).sandbox.id).not.toBe(sandboxId);
  });

  it('leaves the thread free when its sandbox failed before it ever served', async () => {
    const thread = `thr_${randomUUID()}`;
    broker.provider.failNext('create');
    expect((await negotiate(thread, 'ensure')).status).toBe(503);
    const next = await negotiate(thread, 'ensure');
    expect(next.status).toBe(200);
  });
});
