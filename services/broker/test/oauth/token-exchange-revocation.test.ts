// A revoked capability token buys nothing new (docs/security.md#revocation): revoked by jti,
// by session while its binding is still held, or by sandbox (its key rotated), it is refused
// by token exchange (RFC 6749 §5.2 shape, as every refusal of the subject there) and by thread
// refresh (the agent's own refusal: 401 UNAUTHENTICATED, details.reason "revoked"), with
// nothing minted. Tokens of the same binding that were not revoked still exchange.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import {
  RefreshTokenResponse,
  RevocationResponse,
  ThreadRefreshResponse,
  ThreadSandboxResponse,
  TokenExchangeResponse,
} from '@sbx/protocol';
import { createVerifier } from '@sbx/tokens';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { exchangeForm, HUMAN_SCOPES, postForm, verifyAsAgent } from './exchange-support.js';

interface Held {
  readonly threadId: string;
  readonly sandboxId: string;
  readonly sessionId: string;
  readonly token: string;
}

describeEachBackend('token exchange of revoked subjects', (backend) => {
  const broker = useBroker(backend);
  let holder: string;
  let admin: string;

  beforeAll(async () => {
    holder = await broker.apiKey({ scopes: HUMAN_SCOPES, principalType: 'user' });
    admin = await broker.apiKey({ scopes: [...ALL_CALLER_SCOPES] });
  });

  /** A thread sandbox the holder negotiated; the session id is its token's `session_id`. */
  const open = async (): Promise<Held> => {
    const threadId = `thr_${randomUUID()}`;
    const res = await request(broker.url)
      .post(`/threads/${threadId}/sandbox`)
      .set(bearer(holder))
      .send({ scopes: ['fs:rw', 'shell'] });
    expect(res.status).toBe(200);
    const { sandbox_id: sandboxId, token } = ThreadSandboxResponse.parse(res.body);
    const sessionId = verifyAsAgent(broker, sandboxId, token).claims.session_id;
    if (sessionId === undefined) throw new Error('the token names no session');
    return { threadId, sandboxId, sessionId, token };
  };
  const threadRefresh = (held: Held, token: string) =>
    request(broker.url)
      .post(`/threads/${held.threadId}/sandbox/refresh`)
      .set(bearer(holder))
      .send({ sandbox_id: held.sandboxId, current_token: token });
  const jtiOf = (held: Held, token: string) => verifyAsAgent(broker, held.sandboxId, token).claims.jti;
  const revoke = async (body: object) => {
    const res = await request(broker.url).post('/admin/revocations').set(bearer(admin)).send(body);
    expect(res.status).toBe(200);
    return RevocationResponse.parse(res.body);
  };
  const exchanged = async (token: string) => {
    const res = await postForm(broker, exchangeForm(token, { scope: 'fs:ro shell:ro' }));
    expect(res.status).toBe(200);
    return TokenExchangeResponse.parse(res.body).access_token;
  };
  const issuedFor = (held: Held) =>
    broker.database.prisma.tokenIssuance.count({ where: { audience: held.sandboxId } });

  /** Refused by the exchange and by thread refresh, each in its route's shape; nothing minted. */
  const expectRevoked = async (held: Held, token: string) => {
    const before = await issuedFor(held);
    const res = await postForm(broker, exchangeForm(token));
    expect([res.status, res.body]).toEqual([
      400,
      { error: 'invalid_request', error_description: 'subject_token was revoked' },
    ]);
    expect(res.headers['cache-control']).toBe('no-store');
    const refreshed = await threadRefresh(held, token);
    expect(refreshed.status).toBe(401);
    expect(refreshed.body.error).toMatchObject({
      code: 'UNAUTHENTICATED',
      message: 'current_token was revoked',
      details: { reason: 'revoked' },
      retryable: false,
    });
    expect(await issuedFor(held)).toBe(before);
  };

  it('refuses a subject revoked by jti; another token of its session still exchanges', async () => {
    const held = await open();
    const refreshed = await threadRefresh(held, held.token);
    expect(refreshed.status).toBe(200);
    const other = ThreadRefreshResponse.parse(refreshed.body).token;
    expect(await revoke({ jti: jtiOf(held, held.token) })).toMatchObject({ revoked_tokens: 1 });
    await expectRevoked(held, held.token);
    const view = await exchanged(other);
    expect(verifyAsAgent(broker, held.sandboxId, view).claims.scope).toBe('fs:ro shell:ro');
    expect((await threadRefresh(held, other)).status).toBe(200);
  });

  it('refuses a subject revoked by session while the binding is held; a new token exchanges', async () => {
    const held = await open();
    const derived = await exchanged(held.token);
    const outcome = await revoke({ session_id: held.sessionId });
    expect(outcome.revoked_tokens).toBeGreaterThanOrEqual(2);
    const binding = await broker.database.prisma.sessionBinding.findUnique({ where: { id: held.sessionId } });
    expect(binding?.live).toBe(true);
    await expectRevoked(held, held.token);
    await expectRevoked(held, derived);
    const renewed = await request(broker.url)
      .post(`/v1/sandbox/sessions/${held.sessionId}/refresh-token`)
      .set(bearer(holder))
      .send({});
    expect(renewed.status).toBe(200);
    const fresh = RefreshTokenResponse.parse(renewed.body).access_token;
    expect(verifyAsAgent(broker, held.sandboxId, await exchanged(fresh))).toBeTruthy();
  });

  it('refuses a subject revoked by sandbox (its key rotated), also where the old key is still cached', async () => {
    const held = await open();
    const derived = await exchanged(held.token);
    // Another instance that has not heard of the rotation yet (its own coordination store):
    // its KeyVault still holds the old key, which it cached by exchanging before.
    const lagging = await broker.instance();
    expect((await postForm(lagging, exchangeForm(held.token))).status).toBe(200);
    expect(await revoke({ sandbox_id: held.sandboxId })).toMatchObject({ key_rotated: true });
    await expectRevoked(held, held.token);
    await expectRevoked(held, derived);
    const late = await postForm(lagging, exchangeForm(held.token));
    expect([late.status, late.body]).toEqual([
      400,
      { error: 'invalid_request', error_description: 'subject_token was revoked' },
    ]);
    const renewed = await request(broker.url)
      .post(`/v1/sandbox/sessions/${held.sessionId}/refresh-token`)
      .set(bearer(holder))
      .send({});
    expect(renewed.status).toBe(200);
    const fresh = RefreshTokenResponse.parse(renewed.body).access_token;
    const rotated = broker.provider.revocations.findLast(
      (r) => r.kind === 'rotateKey' && r.sandboxId === held.sandboxId,
    );
    if (rotated?.kind !== 'rotateKey') throw new Error('the key was not rotated');
    // The agent now verifies with the new key only.
    const verifier = createVerifier({
      keys: rotated.key,
      issuer: 'sbx-broker',
      audience: held.sandboxId,
      maxTtlSeconds: 3600,
    });
    expect(verifier.verify(await exchanged(fresh)).claims.session_id).toBe(held.sessionId);
  });
});
