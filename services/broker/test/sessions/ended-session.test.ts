// A session whose sandbox ended answers 410 SESSION_EXPIRED saying how it ended and, from
// the audit log, by whom and why (issue 27: a shell on a terminated sandbox only saw a
// hang-up). A released binding of a live sandbox stays a plain 410.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { MvpSessionResponse } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.available)!; // Postgres when the machine has it

describe(`the 410 of a session whose sandbox ended [${backend.name}]`, () => {
  const broker = useBroker(backend, { loops: false });
  let user: string;
  let admin: string;
  beforeAll(async () => {
    user = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox'],
      principalType: 'user',
      principalId: 'usr_holder',
    });
    admin = await broker.apiKey({ scopes: ['admin:sandbox'], principalId: 'ops_ender' });
  });

  const api = () => request(broker.url);
  async function ensure(): Promise<MvpSessionResponse> {
    const res = await api()
      .post('/v1/sandbox/sessions')
      .set(bearer(user))
      .send({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' });
    return MvpSessionResponse.parse(res.body);
  }
  const inspect = (sessionId: string) => api().get(`/v1/sandbox/sessions/${sessionId}`).set(bearer(user));

  it('names the admin who terminated it and the reason', async () => {
    const session = await ensure();
    const ended = await api()
      .post(`/admin/sandboxes/${session.sandbox.id}/terminate`)
      .set(bearer(admin))
      .send({});
    expect(ended.status).toBe(200);
    const res = await inspect(session.session_id);
    expect(res.status).toBe(410);
    expect(res.body.error).toMatchObject({
      code: 'SESSION_EXPIRED',
      message: `session ${session.session_id} has ended: its sandbox ${session.sandbox.id} was terminated by ops_ender (admin_terminate)`,
      details: {
        sandbox_id: session.sandbox.id,
        sandbox_state: 'terminated',
        ended_by: 'ops_ender',
        reason: 'admin_terminate',
      },
    });
  });

  it('names the caller whose release of the last binding ended it', async () => {
    const session = await ensure();
    expect((await api().delete(`/v1/sandbox/sessions/${session.session_id}`).set(bearer(user))).status).toBe(
      204,
    );
    const res = await inspect(session.session_id);
    expect(res.status).toBe(410);
    expect(res.body.error.details).toEqual({
      sandbox_id: session.sandbox.id,
      sandbox_state: 'terminated',
      ended_by: 'usr_holder',
      reason: 'last_binding_released',
    });
  });
});
