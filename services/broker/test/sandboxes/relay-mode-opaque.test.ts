// Relay mode with opaque tokens (TOKEN_FORMAT=opaque, docs/architecture.md D20): the broker
// checks an opaque token shown at `/v1/sandboxes/{id}/dp/…` by its issuance row, so a
// revoked one is refused at the broker on the very next call, before any agent asks
// the introspection endpoint about it.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { ErrorEnvelope, ThreadSandboxResponse } from '@sbx/protocol';
import { OPAQUE_TOKEN_PREFIX, opaqueTokenHash } from '@sbx/tokens';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;

describe(`relay mode with opaque tokens [${backend.name}]`, () => {
  // The agents ask the broker about every opaque token; its address is known once it listens.
  let introspectionUrl: string | undefined;
  const broker = useLocalBroker(backend, {
    isolation: 'none',
    settings: { provisioningWaitMs: 20_000, tokenFormat: 'opaque' },
    dataplaneRelay: true,
    local: { agentIntrospectionUrl: () => introspectionUrl },
  });
  let user: string;
  let admin: string;

  beforeAll(async () => {
    introspectionUrl = `${broker.url}/oauth/introspect`;
    user = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
    admin = await broker.apiKey({ scopes: ALL_CALLER_SCOPES });
  }, 60_000);

  it('refuses a revoked opaque token at the broker on the very next /dp call', async () => {
    const opened = await request(broker.url)
      .post(`/threads/thr_${randomUUID()}/sandbox`)
      .set(bearer(user))
      .send({ scopes: ['fs:ro'] });
    expect(opened.status).toBe(200);
    const session = ThreadSandboxResponse.parse(opened.body);
    expect(session.token.startsWith(OPAQUE_TOKEN_PREFIX)).toBe(true);
    expect(session.endpoints.http).toBe(`${broker.url}/v1/sandboxes/${session.sandbox_id}/dp`);
    const info = () =>
      fetch(`${session.endpoints.http}/v1/info`, { headers: { authorization: `Bearer ${session.token}` } });
    expect((await info()).status).toBe(200);

    // An opaque token carries no claims: its jti is the issuance row's, found by its hash.
    const issuance = await broker.repositories.tokens.findByTokenHash(opaqueTokenHash(session.token));
    expect(issuance?.audience).toBe(session.sandbox_id);
    const revoked = await request(broker.url)
      .post('/admin/revocations')
      .set(bearer(admin))
      .send({ jti: issuance?.jti });
    expect(revoked.status).toBe(200);

    const after = await info();
    const refusal = ErrorEnvelope.parse(await after.json()).error;
    expect([after.status, refusal.code]).toEqual([401, 'UNAUTHENTICATED']);
    // The broker's own refusal ("capability token refused: …"), not the agent's ("token is not active").
    expect(refusal.message).toMatch(/^capability token refused/);
  }, 60_000);
});
