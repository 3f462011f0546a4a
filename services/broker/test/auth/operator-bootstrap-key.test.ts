// BROKER_BOOTSTRAP_API_KEY chosen by the operator's own tools: accepted by the
// configuration, imported hashed under a derived id, and then the key of real
// requests against a real broker, next to OIDC tokens when an issuer is set.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { ConfigError } from '@sbx/service-kit';
import { loadBrokerConfig } from '../../src/config.js';
import { importBootstrapKey } from '../../src/domain/auth/bootstrap.js';
import { DEFAULT_TENANT_ID } from '../../src/domain/auth/principal.js';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';
import { useBroker } from '../support/use-broker.js';
import { liftOwnerShare } from '../support/owner-share.js';
import { OPERATOR_SECRETS } from './operator-secrets.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;

/** The key as the broker takes it at start: through the configuration, then imported. */
function configuredKey(secret: string): string {
  const key = loadBrokerConfig({ BROKER_BOOTSTRAP_API_KEY: secret }).bootstrapApiKey;
  if (key === undefined) throw new Error('the configuration dropped the key');
  return key;
}

/** The same secret with its last unpadded character changed. */
function tampered(secret: string): string {
  const at = secret.replace(/=+$/, '').length - 1;
  return `${secret.slice(0, at)}${secret[at] === 'A' ? 'B' : 'A'}${secret.slice(at + 1)}`;
}

describe(`operator-chosen bootstrap keys [${backend.name}]`, () => {
  let issuer: TestOidcIssuer;
  beforeAll(async () => {
    issuer = await startTestOidcIssuer();
  });
  const broker = useBroker(backend, () => ({
    oidc: createOidcVerifier({ issuer: issuer.issuer, audience: issuer.audience, jwksUri: issuer.jwksUri }),
  }));
  const db = () => broker.database;
  // Every bootstrap key is the default tenant's `admin`: one owner across the tests.
  beforeAll(() => liftOwnerShare(broker.repositories, DEFAULT_TENANT_ID));
  afterAll(async () => {
    await issuer.close();
  });

  const negotiate = (credential: string) =>
    request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(credential))
      .send({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' });

  it.each(Object.entries(OPERATOR_SECRETS))(
    'pass the configuration, are stored hashed and authenticate a real request: %s',
    async (_name, make) => {
      const secret = make();
      const record = await importBootstrapKey(configuredKey(secret), broker.repositories.apiKeys);
      expect(record.prefix).toMatch(/^op_[0-9a-f]{16}$/);
      const row = await db().prisma.apiKey.findUniqueOrThrow({ where: { id: record.id } });
      expect(Buffer.from(row.hash)).toEqual(createHash('sha256').update(secret).digest());
      expect(JSON.stringify({ ...row, hash: undefined })).not.toContain(secret.slice(0, 16));
      expect(await importBootstrapKey(secret, broker.repositories.apiKeys)).toEqual(record);

      expect((await negotiate(secret)).status).toBe(200);
      const wrong = await negotiate(tampered(secret));
      expect(wrong.status).toBe(401);
      expect(JSON.stringify(wrong.body)).not.toContain(secret.slice(0, 16));
    },
  );

  it('stay revoked when the broker imports them again at its next start', async () => {
    const secret = OPERATOR_SECRETS['openssl rand -hex 32']!();
    const record = await importBootstrapKey(configuredKey(secret), broker.repositories.apiKeys);
    expect((await negotiate(secret)).status).toBe(200);
    await broker.repositories.apiKeys.revoke(record.id, record.tenantId);
    const again = await importBootstrapKey(configuredKey(secret), broker.repositories.apiKeys);
    expect(again.revokedAt).toBeInstanceOf(Date);
    // The running broker remembers the key for up to 10 s; the store refuses it at once.
    expect(await broker.repositories.apiKeys.verify(secret)).toBeNull();
  });

  it('authenticate next to OIDC access tokens when an issuer is configured', async () => {
    const secret = OPERATOR_SECRETS['a Kubernetes-style random 40-character alphanumeric']!();
    await importBootstrapKey(configuredKey(secret), broker.repositories.apiKeys);
    expect((await negotiate(secret)).status).toBe(200);
    const token = issuer.sign({ sub: 'alice', scope: 'write:sandbox' }, { alg: 'ES256' });
    expect((await negotiate(token)).status).toBe(200);
  });

  it('are refused at import when weak, naming the variable and how to make one', async () => {
    for (const weak of ['a'.repeat(40), '0123456789'.repeat(4), 'k3y'.repeat(7)]) {
      const error: unknown = await importBootstrapKey(weak, broker.repositories.apiKeys).catch(
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect(String(error)).toContain('BROKER_BOOTSTRAP_API_KEY');
      expect(String(error)).toContain('openssl rand -hex 32');
      expect(String(error)).not.toContain(weak);
    }
  });
});
