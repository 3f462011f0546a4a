// `last_used_at` of an API key (GET /admin/api-keys) is stamped when the key is used (issue 27:
// it stayed null), at most once a minute per key, and never by holding up the request.
import { setImmediate as flushed } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { ApiKeyPage, CreatedApiKeyResponse } from '@sbx/protocol';
import { createCallerAuthenticator, type ApiKeyIdentity } from '../../src/domain/auth/authenticate-caller.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.available)!; // Postgres when the machine has it

describe(`API key last_used_at [${backend.name}]`, () => {
  const broker = useBroker(backend, { loops: false });
  let operator: string;
  beforeAll(async () => {
    operator = await broker.apiKey({ scopes: ['admin:sandbox', 'admin:keys', 'read:sandbox'] });
  });

  async function lastUsedOf(id: string): Promise<string | null | undefined> {
    const listed = await request(broker.url).get('/admin/api-keys').set(bearer(operator));
    return ApiKeyPage.parse(listed.body).items.find((key) => key.id === id)?.last_used_at;
  }

  it('shows when a key was last used in the admin listing', async () => {
    const created = await request(broker.url)
      .post('/admin/api-keys')
      .set(bearer(operator))
      .send({
        tenant_id: broker.tenantId,
        principal_id: 'usr_last_used',
        principal_type: 'user',
        scopes: ['read:sandbox'],
      });
    const key = CreatedApiKeyResponse.parse(created.body);
    expect(await lastUsedOf(key.id)).toBeNull();
    const before = Date.now();
    // Any authenticated call is a use, whatever it answers.
    const used = await request(broker.url).get('/v1/sandbox/sessions/ssn_none').set(bearer(key.key));
    expect(used.status).toBe(404);
    let stamped: string | null | undefined = null;
    for (let tries = 0; tries < 100 && stamped === null; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      stamped = await lastUsedOf(key.id);
    }
    expect(stamped).not.toBeNull();
    expect(Date.parse(stamped ?? '')).toBeGreaterThanOrEqual(before - 1000);
  });
});

describe('API key use stamps (no database: a store that records)', () => {
  const identity: ApiKeyIdentity = {
    id: 'key_1',
    tenantId: 't',
    principalId: 'usr_1',
    principalType: 'user',
    scopes: ['read:sandbox'],
  };

  it('writes at most once a minute per key, without waiting for the write', async () => {
    let now = 1_000_000;
    const stamps: [string, number][] = [];
    const apiKeys = {
      verify: () => Promise.resolve(identity),
      // Never completes: a request must not wait for it.
      markUsed: (id: string, at: Date) => {
        stamps.push([id, at.getTime()]);
        return new Promise<void>(() => undefined);
      },
    };
    const auth = createCallerAuthenticator({ apiKeys, now: () => now });
    for (let i = 0; i < 3; i++) {
      await expect(auth.authenticate('Bearer sbk_any')).resolves.toMatchObject({ keyId: 'key_1' });
      now += 10_000;
    }
    await flushed();
    expect(stamps).toEqual([['key_1', 1_000_000]]);
    now = 1_060_000;
    await auth.authenticate('Bearer sbk_any');
    await flushed();
    expect(stamps).toEqual([
      ['key_1', 1_000_000],
      ['key_1', 1_060_000],
    ]);
  });

  it('a failing write fails no request; it is reported', async () => {
    const failures: unknown[] = [];
    const apiKeys = {
      verify: () => Promise.resolve({ ...identity, id: 'key_2' }),
      markUsed: () => Promise.reject(new Error('database down')),
    };
    const auth = createCallerAuthenticator({ apiKeys, onKeyUsageError: (err) => failures.push(err) });
    await expect(auth.authenticate('Bearer sbk_other')).resolves.toMatchObject({ keyId: 'key_2' });
    await flushed();
    await flushed();
    expect(failures).toHaveLength(1);
  });
});
