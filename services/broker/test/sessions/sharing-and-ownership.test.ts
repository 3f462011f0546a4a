// A human and an agent share their thread's sandbox with a binding each; the
// sandbox lives until its last binding is released. Other owners and tenants
// see nothing of it (404, never 403); an admin sees everything.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { SessionResponse } from '@sbx/protocol';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';
import { useBroker } from '../support/use-broker.js';

describeEachBackend('sharing and ownership', (backend) => {
  let issuer: TestOidcIssuer;
  beforeAll(async () => {
    issuer = await startTestOidcIssuer();
  });
  const broker = useBroker(backend, () => ({
    oidc: createOidcVerifier({ issuer: issuer.issuer, audience: issuer.audience, jwksUri: issuer.jwksUri }),
  }));
  const db = () => broker.database;
  let orchestrator: string;

  beforeAll(async () => {
    orchestrator = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'],
    });
  });
  afterAll(async () => {
    await issuer.close();
  });

  const negotiate = async (key: string, body: object) => {
    const res = await request(broker.url).post('/v1/sandbox/sessions').set(bearer(key)).send(body);
    expect(res.status).toBe(200);
    return SessionResponse.parse(res.body);
  };
  const release = (key: string, id: string) =>
    request(broker.url).delete(`/v1/sandbox/sessions/${id}`).set(bearer(key));
  const sandboxRow = (id: string) => db().prisma.sandbox.findUniqueOrThrow({ where: { id } });

  it('gives human and agent one sandbox, distinct bindings; the last release destroys it', async () => {
    const scope = { type: 'thread', id: `thr_${randomUUID()}` };
    const human = await negotiate(orchestrator, {
      scope,
      mode: 'ensure',
      actor: { type: 'human', id: 'usr_ann' },
    });
    const agent = await negotiate(orchestrator, {
      scope,
      mode: 'ensure',
      actor: { type: 'agent', id: 'agt_bob' },
    });
    expect(agent.binding.sandbox_id).toBe(human.binding.sandbox_id);
    expect(agent.binding.id).not.toBe(human.binding.id);
    expect(human.credentials.granted_capabilities).toEqual(['fs:rw', 'shell']);
    expect(agent.credentials.granted_capabilities).toEqual(['fs:rw', 'process']);
    const sandboxId = human.binding.sandbox_id;

    expect((await release(orchestrator, human.binding.id)).status).toBe(204);
    expect(broker.provider.calls('destroy')).not.toContain(sandboxId);
    expect((await sandboxRow(sandboxId)).state).toBe('active');
    const refreshed = await request(broker.url)
      .post(`/v1/sandbox/sessions/${agent.binding.id}/refresh-token`)
      .set(bearer(orchestrator))
      .send({});
    expect(refreshed.status).toBe(200);

    expect((await release(orchestrator, agent.binding.id)).status).toBe(204);
    expect(broker.provider.calls('destroy')).toContain(sandboxId);
    expect(await broker.provider.status(sandboxId)).toBe('missing');
    expect(await sandboxRow(sandboxId)).toMatchObject({ state: 'terminated', live: null });

    const next = await negotiate(orchestrator, {
      scope,
      mode: 'ensure',
      actor: { type: 'human', id: 'usr_ann' },
    });
    expect(next.binding.sandbox_id).not.toBe(sandboxId);
  });

  it("shares a user's sandbox with the agent acting for it by delegation (RFC 8693 act)", async () => {
    const user = `usr_${randomUUID()}`;
    const scopes = 'read:sandbox write:sandbox exec:sandbox attach:sandbox';
    const userToken = issuer.sign({ sub: user, tenant_id: broker.tenantId, scope: scopes });
    const agentToken = issuer.sign({
      sub: user,
      act: { sub: 'agt_helper' },
      tenant_id: broker.tenantId,
      scope: scopes,
    });
    const threadId = `thr_${randomUUID()}`;
    const mine = await negotiate(userToken, { thread_id: threadId, mode: 'ensure' });
    const its = await negotiate(agentToken, { thread_id: threadId, mode: 'ensure' });
    expect(its.sandbox.id).toBe(mine.sandbox.id);
    expect(its.session_id).not.toBe(mine.session_id);
    expect(mine.credentials.granted_capabilities).toEqual(['fs:rw', 'shell']);
    expect(its.credentials.granted_capabilities).toEqual(['fs:rw', 'process']);
  });

  it('hides a session from other owners and tenants (404) and shows it to an admin', async () => {
    const threadId = `thr_${randomUUID()}`;
    const owner = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
    const sameTenant = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox'],
      principalType: 'user',
    });
    const otherTenant = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox'],
      tenantId: `tenant_${randomUUID()}`,
    });
    const admin = await broker.apiKey({ scopes: ALL_CALLER_SCOPES, tenantId: `tenant_${randomUUID()}` });
    const session = await negotiate(owner, { thread_id: threadId, mode: 'ensure' });
    const one = `/v1/sandbox/sessions/${session.session_id}`;

    for (const stranger of [sameTenant, otherTenant]) {
      const calls = [
        [request(broker.url).get(one), 'SESSION_NOT_FOUND'],
        [request(broker.url).post(`${one}/refresh`).send({}), 'SESSION_NOT_FOUND'],
        [request(broker.url).post(`${one}/refresh-token`).send({}), 'BINDING_NOT_FOUND'],
        [request(broker.url).post(`${one}/heartbeat`).send({}), 'BINDING_NOT_FOUND'],
        [request(broker.url).delete(one), 'SESSION_NOT_FOUND'],
      ] as const;
      for (const [call, code] of calls) {
        const res = await call.set(bearer(stranger));
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe(code);
      }
      // Another owner naming the same thread gets a sandbox of its own, never this one.
      const get = await request(broker.url)
        .post('/v1/sandbox/sessions')
        .set(bearer(stranger))
        .send({ thread_id: threadId, mode: 'get' });
      expect(get.status).toBe(404);
      const own = await negotiate(stranger, { thread_id: threadId, mode: 'ensure' });
      expect(own.sandbox.id).not.toBe(session.sandbox.id);
    }
    const seen = await request(broker.url).get(one).set(bearer(admin));
    expect(seen.status).toBe(200);
    expect(seen.body.session_id).toBe(session.session_id);
    expect((await request(broker.url).get(one).set(bearer(owner))).status).toBe(200);
  });
});
