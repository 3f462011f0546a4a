// Opaque-token mode (docs/architecture.md D20) on a real broker: negotiation hands out an
// opaque token, POST /oauth/introspect (RFC 7662) tells the sandbox's own agent what it
// grants, and release or /admin/revocations makes it inactive at once. Another sandbox's
// credential learns nothing; a wrong secret is 401; malformed forms are 400.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { SessionResponse } from '@sbx/protocol';
import { introspectionAuthorization, OPAQUE_TOKEN_PREFIX, type SigningKey } from '@sbx/tokens';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { liftOwnerShare } from '../support/owner-share.js';
import { sandboxKey } from './exchange-support.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;

describe(`opaque tokens and introspection [${backend.name}]`, () => {
  const broker = useBroker(backend, { settings: { tokenFormat: 'opaque' } });
  let orchestrator: string;
  let admin: string;

  beforeAll(async () => {
    await liftOwnerShare(broker.repositories, broker.tenantId); // one orchestrator, many threads
    orchestrator = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox', 'attach:sandbox'] });
    admin = await broker.apiKey({ scopes: [...ALL_CALLER_SCOPES] });
  });

  const negotiate = async (thread: string, actor: { type: string; id: string }) => {
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(orchestrator))
      .send({ scope: { type: 'thread', id: thread }, mode: 'ensure', actor });
    expect(res.status).toBe(200);
    return SessionResponse.parse(res.body);
  };
  const keyOf = (session: SessionResponse): SigningKey => sandboxKey(broker, session.binding.sandbox_id);
  /** POST /oauth/introspect as the agent of `sandboxId` (with `key`, its own unless told). */
  const introspect = (sandboxId: string, key: SigningKey, form: Record<string, string> | string) =>
    request(broker.url)
      .post('/oauth/introspect')
      .set('Authorization', introspectionAuthorization(key, sandboxId))
      .type('form')
      .send(form);
  const activeOf = async (session: SessionResponse, token = session.token) => {
    const res = await introspect(session.binding.sandbox_id, keyOf(session), { token });
    expect(res.status).toBe(200);
    return res.body as { active: boolean };
  };

  it('negotiation hands out an opaque token that introspects active with its claims', async () => {
    const human = await negotiate(`thr_${randomUUID()}`, { type: 'human', id: 'usr_ann' });
    expect(human.token.startsWith(OPAQUE_TOKEN_PREFIX)).toBe(true);
    expect(human.token).not.toContain('.');
    expect(human.credentials.access_token).toBe(human.token);
    const res = await introspect(human.binding.sandbox_id, keyOf(human), { token: human.token });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const scope = human.credentials.granted_capabilities.join(' ');
    expect(res.body).toMatchObject({
      active: true,
      scope,
      token_type: 'Bearer',
      iss: 'sbx-broker',
      sub: 'usr_ann',
      aud: human.binding.sandbox_id,
      session_id: human.binding.id,
      jti: expect.stringMatching(/^tok_/),
    });
    const body = res.body as { exp: number; iat: number };
    expect(body.exp * 1000).toBe(new Date(human.credentials.expires_at).getTime());
    expect(body.exp).toBeGreaterThan(body.iat);
    // Only the hash is stored, never the token.
    const row = await broker.database.prisma.tokenIssuance.findFirst({
      where: { sessionId: human.binding.id },
    });
    expect(row?.tokenHash).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(row)).not.toContain(human.token.slice(4));
  });

  it('release makes the token inactive at once; the other binding keeps working', async () => {
    const thread = `thr_${randomUUID()}`;
    const human = await negotiate(thread, { type: 'human', id: 'usr_bo' });
    const agent = await negotiate(thread, { type: 'agent', id: 'agt_cy' });
    expect(agent.binding.sandbox_id).toBe(human.binding.sandbox_id);
    expect(await activeOf(human)).toMatchObject({ active: true });
    const released = await request(broker.url)
      .delete(`/v1/sandbox/sessions/${human.binding.id}`)
      .set(bearer(orchestrator));
    expect(released.status).toBe(204);
    expect(await activeOf(human)).toEqual({ active: false });
    expect(await activeOf(agent)).toMatchObject({ active: true });
  });

  it('/admin/revocations by jti and by sandbox make tokens inactive', async () => {
    const thread = `thr_${randomUUID()}`;
    const human = await negotiate(thread, { type: 'human', id: 'usr_di' });
    const agent = await negotiate(thread, { type: 'agent', id: 'agt_ed' });
    const { jti } = (await activeOf(human)) as { active: boolean; jti: string };
    const one = await request(broker.url).post('/admin/revocations').set(bearer(admin)).send({ jti });
    expect(one.status).toBe(200);
    expect(await activeOf(human)).toEqual({ active: false });
    expect(await activeOf(agent)).toMatchObject({ active: true });
    const all = await request(broker.url)
      .post('/admin/revocations')
      .set(bearer(admin))
      .send({ sandbox_id: agent.binding.sandbox_id });
    expect(all.status).toBe(200);
    // The key was rotated: the old credential is refused, the new key's learns the token is dead.
    const sandboxId = agent.binding.sandbox_id;
    expect((await introspect(sandboxId, keyOf(agent), { token: agent.token })).status).toBe(401);
    const rotated = broker.provider.revocations.findLast(
      (r) => r.kind === 'rotateKey' && r.sandboxId === sandboxId,
    );
    if (rotated?.kind !== 'rotateKey') throw new Error('the key was not rotated');
    const res = await introspect(sandboxId, rotated.key, { token: agent.token });
    expect([res.status, res.body]).toEqual([200, { active: false }]);
  });

  it("another sandbox's credential learns nothing; a wrong secret or none is 401", async () => {
    const mine = await negotiate(`thr_${randomUUID()}`, { type: 'human', id: 'usr_fay' });
    const other = await negotiate(`thr_${randomUUID()}`, { type: 'human', id: 'usr_gus' });
    expect(other.binding.sandbox_id).not.toBe(mine.binding.sandbox_id);
    expect(await activeOf(other, mine.token)).toEqual({ active: false });
    const forged = await introspect(mine.binding.sandbox_id, keyOf(other), { token: mine.token });
    expect([forged.status, forged.body]).toEqual([
      401,
      { error: 'invalid_client', error_description: expect.any(String) },
    ]);
    expect(forged.headers['www-authenticate']).toBe('Basic');
    const none = await request(broker.url).post('/oauth/introspect').type('form').send({ token: mine.token });
    expect(none.status).toBe(401);
    const unknown = await introspect('sbx_nope', keyOf(mine), { token: mine.token });
    expect(unknown.status).toBe(401);
  });

  it('garbage, unknown and JWT-looking tokens are inactive; malformed forms are 400', async () => {
    const mine = await negotiate(`thr_${randomUUID()}`, { type: 'human', id: 'usr_hal' });
    for (const token of ['garbage', `${OPAQUE_TOKEN_PREFIX}${'A'.repeat(43)}`, 'a.b.c'])
      expect(await activeOf(mine, token)).toEqual({ active: false });
    const post = (body: string, type = 'form') =>
      request(broker.url)
        .post('/oauth/introspect')
        .set('Authorization', introspectionAuthorization(keyOf(mine), mine.binding.sandbox_id))
        .type(type)
        .send(body);
    const cases = [
      await post(''),
      await post(`token=${mine.token}&token=${mine.token}`),
      await post('token='),
      await post(JSON.stringify({ token: mine.token }), 'json'),
    ];
    for (const res of cases)
      expect([res.status, res.body]).toEqual([
        400,
        { error: 'invalid_request', error_description: expect.any(String) },
      ]);
  });
});
