// RFC 8693 token exchange on a real broker: a capability token in, a narrower
// one out, which the agent accepts (verified with the sandbox's own key), for
// the same sandbox, subject, session and thread, no longer lived, recorded by
// jti with its parent and audited; with an authenticated actor in `act`.
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { JWT_TOKEN_TYPE, SessionResponse, TokenExchangeResponse, ACCESS_TOKEN_TYPE } from '@sbx/protocol';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { describeEachBackend } from '../support/test-database.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';
import { useBroker } from '../support/use-broker.js';
import { exchangeForm, negotiate, postForm, verifyAsAgent } from './exchange-support.js';

describeEachBackend('token exchange', (backend) => {
  let idp: TestOidcIssuer;
  beforeAll(async () => {
    idp = await startTestOidcIssuer();
  });
  afterAll(() => idp.close());
  const broker = useBroker(backend, () => ({
    oidc: createOidcVerifier({ issuer: idp.issuer, audience: idp.audience, jwksUri: idp.jwksUri }),
  }));
  let human: SessionResponse;

  beforeAll(async () => {
    human = await negotiate(broker);
  });

  const exchange = async (token: string, fields: Record<string, string | undefined> = {}) => {
    const res = await postForm(broker, exchangeForm(token, fields));
    expect([res.status, res.body]).toEqual([200, expect.anything()]);
    return { res, body: TokenExchangeResponse.parse(res.body) };
  };

  it("hands a teammate a read-only view that the agent accepts, traced to the human's token", async () => {
    expect(human.credentials.granted_capabilities).toEqual(['fs:rw', 'shell']);
    const parent = verifyAsAgent(broker, human.sandbox.id, human.token).claims;
    const { res, body } = await exchange(human.token, { scope: 'fs:ro shell:ro' });
    expect(body).toMatchObject({
      issued_token_type: 'urn:sbx:params:oauth:token-type:capability',
      token_type: 'Bearer',
      scope: 'fs:ro shell:ro',
    });
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    const child = verifyAsAgent(broker, human.sandbox.id, body.access_token);
    expect(child.scopes).toEqual(['fs:ro', 'shell:ro']);
    expect(child.claims).toMatchObject({
      sub: parent.sub,
      aud: human.sandbox.id,
      session_id: parent.session_id,
      thread_id: human.thread_id,
    });
    expect(child.claims.jti).not.toBe(parent.jti);
    expect(child.claims.exp).toBeLessThanOrEqual(parent.exp);
    expect(body.expires_in).toBe(child.claims.exp - child.claims.iat);
    expect(child.claims.act).toBeUndefined();

    await broker.repositories.journal.drain();
    const row = await broker.database.prisma.tokenIssuance.findUniqueOrThrow({
      where: { jti: child.claims.jti },
    });
    expect(row).toMatchObject({
      parentJti: parent.jti,
      audience: human.sandbox.id,
      scopes: ['fs:ro', 'shell:ro'],
      sessionId: human.session_id,
      requestId: res.headers['x-request-id'],
    });
    const audit = await broker.database.prisma.auditEvent.findFirstOrThrow({
      where: { jti: child.claims.jti },
    });
    expect(audit).toMatchObject({ action: 'token.issue', outcome: 'ok', sandboxId: human.sandbox.id });
    expect(audit.detail).toMatchObject({ grant: 'token_exchange', parent_jti: parent.jti });
  });

  it("keeps the subject's scopes and life by default, and issues a shorter one on request", async () => {
    const parent = verifyAsAgent(broker, human.sandbox.id, human.token).claims;
    const same = verifyAsAgent(broker, human.sandbox.id, (await exchange(human.token)).body.access_token);
    expect(same.scopes).toEqual(['fs:rw', 'shell']);
    expect(same.claims.exp).toBe(parent.exp);
    const { body } = await exchange(human.token, {
      scope: 'fs:ro',
      expires_in: '60',
      audience: human.sandbox.id,
      requested_token_type: JWT_TOKEN_TYPE,
    });
    expect(body).toMatchObject({ expires_in: 60, scope: 'fs:ro', issued_token_type: JWT_TOKEN_TYPE });
    const short = verifyAsAgent(broker, human.sandbox.id, body.access_token).claims;
    expect(short.exp - short.iat).toBe(60);
  });

  it('names an authenticated agent acting for the user in act, and keeps the chain', async () => {
    const agentKey = await broker.apiKey({ scopes: [], principalType: 'agent', principalId: 'agent-7' });
    const { body } = await exchange(human.token, {
      scope: 'fs:rw',
      actor_token: agentKey,
      actor_token_type: ACCESS_TOKEN_TYPE,
    });
    const delegated = verifyAsAgent(broker, human.sandbox.id, body.access_token);
    expect(delegated.claims.sub).toBe(verifyAsAgent(broker, human.sandbox.id, human.token).claims.sub);
    expect(delegated.claims.act).toEqual({ sub: 'agent-7' });
    expect(delegated.scopes).toEqual(['fs:rw']);

    // Narrowed again without an actor: still the agent acting. With another: a nested chain.
    const narrower = verifyAsAgent(
      broker,
      human.sandbox.id,
      (await exchange(body.access_token, { scope: 'fs:ro' })).body.access_token,
    );
    expect(narrower.claims.act).toEqual({ sub: 'agent-7' });
    const helperKey = await broker.apiKey({ scopes: [], principalType: 'agent', principalId: 'helper-1' });
    const { body: chained } = await exchange(body.access_token, {
      actor_token: helperKey,
      actor_token_type: ACCESS_TOKEN_TYPE,
    });
    expect(verifyAsAgent(broker, human.sandbox.id, chained.access_token).claims.act).toEqual({
      sub: 'helper-1',
      act: { sub: 'agent-7' },
    });
  });

  it("takes the actor from its own OIDC token: a delegated agent's act.sub", async () => {
    const actorToken = idp.sign({ sub: 'alice', act: { sub: 'agent-42' }, tenant_id: broker.tenantId });
    const form = { actor_token: actorToken, actor_token_type: ACCESS_TOKEN_TYPE, scope: 'fs:ro' };
    const { body } = await exchange(human.token, form);
    expect(verifyAsAgent(broker, human.sandbox.id, body.access_token).claims.act).toEqual({
      sub: 'agent-42',
    });
    // An actor of another tenant may not be named.
    const stranger = idp.sign({ sub: 'mallory', tenant_id: 'elsewhere' });
    const res = await postForm(
      broker,
      exchangeForm(human.token, { actor_token: stranger, actor_token_type: ACCESS_TOKEN_TYPE }),
    );
    expect([res.status, res.body.error]).toEqual([400, 'invalid_request']);
  });
});
