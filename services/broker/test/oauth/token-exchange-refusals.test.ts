// Token exchange never escalates: a wider scope, a longer life, another
// sandbox (by audience or by key), an expired, forged or garbage subject, a
// released session, a wrong grant or malformed request are each refused in the
// RFC 6749 §5.2 shape, with nothing minted.
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { ACCESS_TOKEN_TYPE, OAuthErrorResponse, SessionResponse, TokenExchangeResponse } from '@sbx/protocol';
import { generateSigningKey, mintCapabilityToken, type SigningKey } from '@sbx/tokens';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import {
  exchangeForm,
  negotiate,
  negotiateAs,
  postForm,
  sandboxKey,
  verifyAsAgent,
} from './exchange-support.js';

describeEachBackend('token exchange refusals', (backend) => {
  const broker = useBroker(backend);
  let a: SessionResponse;
  let b: SessionResponse;

  beforeAll(async () => {
    a = await negotiate(broker);
    b = await negotiate(broker);
  });

  const expectRefused = async (
    form: Record<string, string> | string,
    error: string,
    description?: RegExp,
  ) => {
    const res = await postForm(broker, form);
    expect([res.status, res.body]).toEqual([400, { error, error_description: expect.any(String) }]);
    expect(OAuthErrorResponse.parse(res.body).error_description).toMatch(description ?? /./);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  };

  /** Tokens recorded for a's sandbox: a refusal mints nothing. */
  const issuedForA = () => broker.database.prisma.tokenIssuance.count({ where: { audience: a.sandbox.id } });

  /** A token with a's claims (its session, thread and subject), signed with `key`. */
  const forged = (key: SigningKey, ttlSeconds: number, nowMs = Date.now()) => {
    const claims = verifyAsAgent(broker, a.sandbox.id, a.token).claims;
    return mintCapabilityToken({
      key,
      issuer: 'sbx-broker',
      subject: claims.sub,
      sandboxId: a.sandbox.id,
      scopes: ['fs:rw', 'shell', 'process'],
      ttlSeconds,
      sessionId: a.session_id,
      now: () => nowMs,
    }).token;
  };

  it('refuses a wider scope, also from an already narrowed token', async () => {
    const before = await issuedForA();
    await expectRefused(exchangeForm(a.token, { scope: 'fs:rw process' }), 'invalid_scope', /exceeds/);
    await expectRefused(
      exchangeForm(a.token, { scope: 'fs:root' }),
      'invalid_scope',
      /unknown scope: fs:root/,
    );
    await expectRefused(exchangeForm(a.token, { scope: '  ' }), 'invalid_scope');
    const narrowed = await postForm(broker, exchangeForm(a.token, { scope: 'fs:ro shell:ro' }));
    const view = TokenExchangeResponse.parse(narrowed.body).access_token;
    await expectRefused(exchangeForm(view, { scope: 'fs:rw' }), 'invalid_scope');
    await expectRefused(exchangeForm(view, { scope: 'shell' }), 'invalid_scope');
    expect(await issuedForA()).toBe(before + 1);
    // Each escalation attempt by a genuine token is an audit row naming the token it came from.
    const attempts = await broker.database.prisma.auditEvent.findMany({
      where: { sandboxId: a.sandbox.id, action: 'token.issue', outcome: 'invalid_scope' },
    });
    expect(attempts.length).toBeGreaterThanOrEqual(5);
    expect(attempts[0]).toMatchObject({ callerType: 'user', sessionId: a.session_id });
  });

  it('refuses a longer life than the subject has left', async () => {
    const before = await issuedForA();
    await expectRefused(
      exchangeForm(a.token, { expires_in: '3600' }),
      'invalid_request',
      /remaining lifetime/,
    );
    await expectRefused(exchangeForm(a.token, { expires_in: '0' }), 'invalid_request', /expires_in/);
    await expectRefused(exchangeForm(a.token, { expires_in: '-5' }), 'invalid_request', /expires_in/);
    expect(await issuedForA()).toBe(before);
  });

  it("refuses another sandbox's audience and a token signed with another sandbox's key", async () => {
    await expectRefused(exchangeForm(a.token, { audience: b.sandbox.id }), 'invalid_target');
    await expectRefused(exchangeForm(a.token, { resource: 'https://elsewhere' }), 'invalid_target');
    await expectRefused(
      exchangeForm(forged(sandboxKey(broker, b.sandbox.id), 600)),
      'invalid_request',
      /not a valid/,
    );
    await expectRefused(exchangeForm(forged(generateSigningKey(), 600)), 'invalid_request', /not a valid/);
    // b's own token says it is b's: it can only ever be exchanged for b.
    const res = await postForm(broker, exchangeForm(b.token));
    expect(
      verifyAsAgent(broker, b.sandbox.id, TokenExchangeResponse.parse(res.body).access_token),
    ).toBeTruthy();
  });

  it('refuses an expired, a garbage and a mistyped subject', async () => {
    const before = await issuedForA();
    const key = sandboxKey(broker, a.sandbox.id);
    await expectRefused(exchangeForm(forged(key, 60, Date.now() - 120_000)), 'invalid_request', /expired/);
    // Inside the verifier's clock tolerance, but past exp: still expired.
    await expectRefused(exchangeForm(forged(key, 60, Date.now() - 65_000)), 'invalid_request', /expired/);
    await expectRefused(exchangeForm('not-a-token'), 'invalid_request', /not a valid/);
    await expectRefused(exchangeForm('a.b.c'), 'invalid_request', /not a valid/);
    await expectRefused(
      exchangeForm(a.token, { subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' }),
      'invalid_request',
      /subject_token_type/,
    );
    await expectRefused(exchangeForm(a.token, { requested_token_type: 'urn:x:saml' }), 'invalid_request');
    expect(await issuedForA()).toBe(before);
  });

  it('refuses a wrong grant, missing or repeated parameters, and a JSON body', async () => {
    await expectRefused(
      exchangeForm(a.token, { grant_type: 'client_credentials' }),
      'unsupported_grant_type',
    );
    await expectRefused(
      exchangeForm(a.token, { grant_type: undefined }),
      'invalid_request',
      /grant_type is missing/,
    );
    await expectRefused(
      exchangeForm(a.token, { subject_token: undefined }),
      'invalid_request',
      /subject_token/,
    );
    await expectRefused(exchangeForm(a.token, { subject_token_type: undefined }), 'invalid_request');
    const twice = `${new URLSearchParams(exchangeForm(a.token)).toString()}&subject_token=x`;
    await expectRefused(twice, 'invalid_request', /subject_token is repeated/);
    const json = await request(broker.url).post('/oauth/token').send(exchangeForm(a.token));
    expect([json.status, json.body.error]).toEqual([400, 'invalid_request']);
    expect(json.body.error_description).toMatch(/x-www-form-urlencoded/);
  });

  it('refuses an actor that does not authenticate, and a released session', async () => {
    const actor = { actor_token: 'sbk_nope', actor_token_type: ACCESS_TOKEN_TYPE };
    await expectRefused(exchangeForm(a.token, actor), 'invalid_request', /actor_token/);
    const key = await broker.apiKey({ scopes: [], principalType: 'agent' });
    await expectRefused(exchangeForm(a.token, { actor_token: key }), 'invalid_request', /actor_token_type/);
    const owner = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
    const released = await negotiateAs(broker, owner);
    const res = await request(broker.url)
      .delete(`/v1/sandbox/sessions/${released.session_id}`)
      .set(bearer(owner));
    expect(res.status).toBe(204);
    await expectRefused(exchangeForm(released.token), 'invalid_request', /released|ended/);
  });
});
