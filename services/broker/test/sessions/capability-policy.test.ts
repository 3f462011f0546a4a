// Granted = requested ∩ actor-type policy ∩ client policy ∩ what the caller's
// scopes allow; nothing left is 403 CAPABILITY_DENIED. Creating needs
// write:sandbox, process needs exec:sandbox, shell needs attach:sandbox.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { RefreshTokenResponse, SessionResponse } from '@sbx/protocol';
import { createVerifier } from '@sbx/tokens';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';
import { useBroker } from '../support/use-broker.js';

describeEachBackend('capability policy and caller scopes', (backend) => {
  let issuer: TestOidcIssuer;
  beforeAll(async () => {
    issuer = await startTestOidcIssuer();
  });
  const broker = useBroker(backend, () => ({
    oidc: createOidcVerifier({ issuer: issuer.issuer, audience: issuer.audience, jwksUri: issuer.jwksUri }),
  }));
  const db = () => broker.database;
  afterAll(async () => {
    await issuer.close();
  });

  const negotiate = (key: string, body: object) =>
    request(broker.url).post('/v1/sandbox/sessions').set(bearer(key)).send(body);
  const thread = () => ({ type: 'thread', id: `thr_${randomUUID()}` }) as const;
  const granted = (res: request.Response) => SessionResponse.parse(res.body).credentials.granted_capabilities;
  const all = ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'];

  it('never gives an agent a shell: shell is dropped, and shell alone is 403 CAPABILITY_DENIED', async () => {
    const key = await broker.apiKey({ scopes: all, principalType: 'agent' });
    const mixed = await negotiate(key, {
      scope: thread(),
      mode: 'ensure',
      requested_capabilities: ['shell', 'fs:rw'],
    });
    expect(mixed.status).toBe(200);
    expect(granted(mixed)).toEqual(['fs:rw']);
    for (const shell of [['shell'], ['shell:ro']]) {
      const denied = await negotiate(key, { scope: thread(), mode: 'ensure', requested_capabilities: shell });
      expect(denied.status).toBe(403);
      expect(denied.body.error).toMatchObject({ code: 'CAPABILITY_DENIED', retryable: false });
    }
    // An agent asking for nothing in particular gets the agent policy.
    expect(granted(await negotiate(key, { scope: thread(), mode: 'ensure' }))).toEqual(['fs:rw', 'process']);
  });

  it('needs write:sandbox to create; a read-only key may only attach, and reads', async () => {
    const scope = thread();
    const reader = await broker.apiKey({
      scopes: ['read:sandbox'],
      principalType: 'user',
      principalId: 'usr_ro',
    });
    const writer = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox'],
      principalType: 'user',
      principalId: 'usr_ro',
    });
    for (const mode of ['ensure', 'create_only']) {
      const refused = await negotiate(reader, { scope, mode });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({
        code: 'FORBIDDEN',
        message: expect.stringContaining('write:sandbox'),
      });
    }
    expect((await negotiate(writer, { scope, mode: 'ensure' })).status).toBe(200);
    const attached = await negotiate(reader, {
      scope,
      mode: 'attach_only',
      requested_capabilities: ['fs:rw'],
    });
    expect(attached.status).toBe(200);
    expect(granted(attached)).toEqual(['fs:ro']); // downgraded, not refused
  });

  it('grants process only with exec:sandbox and shell only with attach:sandbox; exec does not open attach', async () => {
    const execOnly = await broker.apiKey({
      scopes: ['write:sandbox', 'exec:sandbox'],
      principalType: 'service',
    });
    const human = { type: 'human', id: `usr_${randomUUID()}` };
    const noShell = await negotiate(execOnly, {
      scope: thread(),
      mode: 'ensure',
      actor: human,
      requested_capabilities: ['shell'],
    });
    expect(noShell.status).toBe(403);
    expect(noShell.body.error.code).toBe('CAPABILITY_DENIED');
    const agent = { type: 'agent', id: `agt_${randomUUID()}` };
    const runs = await negotiate(execOnly, {
      scope: thread(),
      mode: 'ensure',
      actor: agent,
      requested_capabilities: ['exec', 'fs_write'],
    });
    expect(granted(runs)).toEqual(['fs:rw', 'process']);

    const writeOnly = await broker.apiKey({ scopes: ['write:sandbox'], principalType: 'service' });
    const noExec = await negotiate(writeOnly, {
      scope: thread(),
      mode: 'ensure',
      actor: agent,
      requested_capabilities: ['exec'],
    });
    expect(noExec.body.error.code).toBe('CAPABILITY_DENIED');

    const admin = await broker.apiKey({ scopes: [...all, 'admin:sandbox'], principalType: 'service' });
    const shell = await negotiate(admin, {
      scope: thread(),
      mode: 'ensure',
      actor: human,
      requested_capabilities: ['shell'],
    });
    expect(granted(shell)).toEqual(['shell']);
  });

  it('lets a principal act only as itself unless it is a service', async () => {
    const agentKey = await broker.apiKey({ scopes: all, principalType: 'agent', principalId: 'agt_self' });
    const asHuman = await negotiate(agentKey, {
      scope: thread(),
      mode: 'ensure',
      actor: { type: 'human', id: 'usr_victim' },
    });
    expect(asHuman.status).toBe(403);
    expect(asHuman.body.error.code).toBe('FORBIDDEN');
    const asSelf = await negotiate(agentKey, {
      scope: thread(),
      mode: 'ensure',
      actor: { type: 'agent', id: 'agt_self' },
    });
    expect(asSelf.status).toBe(200);

    const userKey = await broker.apiKey({ scopes: all, principalType: 'user', principalId: 'usr_me' });
    const otherHuman = await negotiate(userKey, {
      scope: thread(),
      mode: 'ensure',
      actor: { type: 'human', id: 'usr_other' },
    });
    expect(otherHuman.status).toBe(403);
    const ownAgent = await negotiate(userKey, {
      scope: thread(),
      mode: 'ensure',
      actor: { type: 'agent', id: 'agt_mine' },
    });
    expect(granted(ownAgent)).toEqual(['fs:rw', 'process']);
  });

  it("caps grants at the OAuth client's policy", async () => {
    const clientId = `client_${randomUUID()}`;
    await broker.repositories.policies.upsertClientPolicy(clientId, { maxCapabilities: ['fs:ro', 'shell'] });
    const token = issuer.sign({
      sub: `usr_${randomUUID()}`,
      tenant_id: broker.tenantId,
      client_id: clientId,
      scope: 'openid read:sandbox write:sandbox attach:sandbox',
    });
    const res = await negotiate(token, {
      scope: thread(),
      mode: 'ensure',
      requested_capabilities: ['fs:rw', 'shell'],
    });
    expect(res.status).toBe(200);
    expect(granted(res)).toEqual(['fs:ro', 'shell']);
    const binding = await db().prisma.sessionBinding.findUniqueOrThrow({
      where: { id: res.body.session_id },
    });
    expect(binding.clientId).toBe(clientId);
  });

  it("enforces the tenant's policy: sandboxes disabled, and its live-sandbox quota", async () => {
    const tenantId = `tenant_${randomUUID()}`;
    const key = await broker.apiKey({ scopes: all, tenantId });
    await broker.repositories.policies.upsertTenantPolicy(tenantId, { maxSandboxes: 1 });
    expect((await negotiate(key, { scope: thread(), mode: 'ensure' })).status).toBe(200);
    const over = await negotiate(key, { scope: thread(), mode: 'ensure' });
    expect(over.status).toBe(403);
    expect(over.body.error.message).toContain('limit');
    await broker.repositories.policies.upsertTenantPolicy(tenantId, {
      sandboxEnabled: false,
      maxSandboxes: 5,
    });
    const disabled = await negotiate(key, { scope: thread(), mode: 'ensure' });
    expect(disabled.status).toBe(403);
    expect(disabled.body.error.message).toContain('disabled');
  });

  it('narrows one refreshed token on request, never widens it, and leaves the binding as it was', async () => {
    const key = await broker.apiKey({ scopes: all, principalType: 'user' });
    const session = SessionResponse.parse((await negotiate(key, { scope: thread(), mode: 'ensure' })).body);
    expect(session.credentials.granted_capabilities).toEqual(['fs:rw', 'shell']);
    const refresh = (body: object, route = 'refresh-token') =>
      request(broker.url)
        .post(`/v1/sandbox/sessions/${session.session_id}/${route}`)
        .set(bearer(key))
        .send(body);

    for (const route of ['refresh-token', 'refresh']) {
      const watch = await refresh({ requested_capabilities: ['shell:ro'] }, route);
      expect(watch.status).toBe(200);
      expect(RefreshTokenResponse.parse(watch.body).granted_capabilities).toEqual(['shell:ro']);
    }
    const wider = await refresh({ requested_capabilities: ['shell', 'process'] });
    expect(wider.status).toBe(403);
    expect(wider.body.error).toMatchObject({ code: 'CAPABILITY_DENIED' });
    expect((await refresh({ requested_capabilities: ['shell:rw!'] })).status).toBe(400);
    expect((await refresh({ scopes: ['shell:ro'] })).status).toBe(400);
    // The binding keeps what it holds: a plain refresh is as before.
    const plain = RefreshTokenResponse.parse((await refresh({})).body);
    expect(plain.granted_capabilities).toEqual(['fs:rw', 'shell']);
  });

  it('grants fs_read + fs_write as fs:rw alone, which still reads; a refresh asking for both is fs:rw too', async () => {
    const key = await broker.apiKey({ scopes: all, principalType: 'user' });
    const both = await negotiate(key, {
      scope: thread(),
      mode: 'ensure',
      requested_capabilities: ['fs_read', 'fs_write', 'shell', 'shell:ro'],
    });
    expect(both.status).toBe(200);
    const session = SessionResponse.parse(both.body);
    expect(session.credentials.granted_capabilities).toEqual(['fs:rw', 'shell']);
    const spec = broker.provider.specOf(session.binding.sandbox_id);
    if (spec === undefined) throw new Error('the provider never created the sandbox');
    const verifier = createVerifier({
      keys: spec.signingKey,
      issuer: spec.tokenIssuer,
      audience: session.binding.sandbox_id,
      maxTtlSeconds: 3600,
    });
    const verified = verifier.verify(session.credentials.access_token);
    expect(verified.claims.scope).toBe('fs:rw shell');
    expect(verified.effectiveScopes.has('fs:ro')).toBe(true); // the agent lets it read
    const refreshed = await request(broker.url)
      .post(`/v1/sandbox/sessions/${session.session_id}/refresh-token`)
      .set(bearer(key))
      .send({ requested_capabilities: ['fs:ro', 'fs:rw'] });
    expect(RefreshTokenResponse.parse(refreshed.body).granted_capabilities).toEqual(['fs:rw']);
  });
});
