// A sandbox-wide revocation on one broker instance rotates the sandbox's key; another
// instance that cached the old key (KeyVault) must sign its next token with the new one,
// or the agent refuses it. Two harnesses on one Postgres and one Redis are two broker
// instances; the FAKE provider records the rotated key the agent would get.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createVerifier, type SigningKey } from '@sbx/tokens';
import request from 'supertest';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { createCoordination } from '../../src/adapters/redis/create-coordination.js';
import { FakeProvider } from '../../src/providers/fake-provider.js';
import { deleteKeysMatching, isRedisReachable, TEST_REDIS_URL } from '../redis/coordination-harness.js';
import {
  bearer,
  randomMasterKey,
  startBrokerHarness,
  type BrokerHarness,
} from '../support/broker-harness.js';
import { backends, useTestDatabase } from '../support/test-database.js';

const postgres = backends.find((backend) => backend.name === 'postgres')!;
const redisUp = await isRedisReachable();
const PREFIX = `sbxtest-keys-${randomUUID().slice(0, 8)}`;

(postgres.available && redisUp ? describe : describe.skip)('key rotation across broker instances', () => {
  const db = useTestDatabase(postgres);
  const provider = new FakeProvider();
  const coordinations: Coordination[] = [];
  let a: BrokerHarness<FakeProvider>;
  let b: BrokerHarness<FakeProvider>;
  beforeAll(async () => {
    const masterKey = randomMasterKey();
    const open = async () => {
      const coordination = await createCoordination({ redisUrl: TEST_REDIS_URL, keyPrefix: PREFIX });
      coordinations.push(coordination);
      return startBrokerHarness({ database: db(), provider, coordination, masterKey });
    };
    [a, b] = [await open(), await open()];
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await Promise.all(coordinations.map((coordination) => coordination.close()));
    await provider.close();
    await deleteKeysMatching(`${PREFIX}*`);
  });

  const ensure = async (broker: BrokerHarness<FakeProvider>, key: string, thread: string) => {
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: thread, mode: 'ensure' });
    expect(res.status).toBe(200);
    return res.body as { token: string; sandbox: { id: string } };
  };
  const acceptedWith = (key: SigningKey, sandboxId: string, token: string): boolean => {
    try {
      createVerifier({ keys: [key], issuer: 'sbx-broker', audience: sandboxId, maxTtlSeconds: 3600 }).verify(
        token,
      );
      return true;
    } catch {
      return false;
    }
  };

  it("signs the other instance's next token with the rotated key", async () => {
    const key = await a.apiKey({ scopes: ['write:sandbox'], tenantId: a.tenantId });
    const admin = await a.apiKey({ scopes: ['admin:sandbox'], tenantId: a.tenantId });
    const thread = `thr_${randomUUID()}`;
    const first = await ensure(a, key, thread);
    const sandboxId = first.sandbox.id;
    const before = await ensure(b, key, thread); // b now holds the key in its cache
    expect(acceptedWith(provider.specOf(sandboxId)!.signingKey, sandboxId, before.token)).toBe(true);

    const revoked = await request(a.url)
      .post('/admin/revocations')
      .set(bearer(admin))
      .send({ sandbox_id: sandboxId });
    expect(revoked.status).toBe(200);
    const rotation = provider.revocations.findLast(
      (entry) => entry.kind === 'rotateKey' && entry.sandboxId === sandboxId,
    );
    const newKey = rotation?.kind === 'rotateKey' ? rotation.key : undefined;
    expect(newKey).toBeDefined();

    const after = await ensure(b, key, thread);
    expect(acceptedWith(newKey!, sandboxId, after.token)).toBe(true);
  });
});
