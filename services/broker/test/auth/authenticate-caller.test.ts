import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createCallerAuthenticator } from '../../src/domain/auth/authenticate-caller.js';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { ApiKeyRepository, parseApiKey } from '../../src/store/api-key-repository.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';

describeEachBackend('API key callers', (backend) => {
  const db = useTestDatabase(backend);
  const repo = () => new ApiKeyRepository(db().prisma);
  const newKey = (scopes: string[] = ['read:sandbox', 'exec:sandbox']) =>
    repo().create({ tenantId: 'acme', principalId: 'ci-bot', principalType: 'agent', scopes, name: 'ci' });

  it('are the key’s principal in the key’s tenant, with the caller scopes it lists', async () => {
    const { key, record } = await newKey(['read:sandbox', 'exec:sandbox', 'sandboxes:legacy', 'fs:rw']);
    const principal = await createCallerAuthenticator({ apiKeys: repo() }).authenticate(`Bearer ${key}`);
    expect(principal).toMatchObject({
      tenantId: 'acme',
      id: 'ci-bot',
      ownerId: 'ci-bot',
      type: 'agent',
      via: 'api_key',
      keyId: record.id,
    });
    expect([...principal.scopes].toSorted()).toEqual(['exec:sandbox', 'read:sandbox']);
    expect(principal.clientId).toBeUndefined();
  });

  it('refuse a wrong secret, a revoked key, an unknown prefix and a malformed key without echoing it', async () => {
    const auth = createCallerAuthenticator({ apiKeys: repo() });
    const { key } = await newKey();
    const parsed = parseApiKey(key);
    const revoked = await newKey();
    await repo().revoke(revoked.record.id, 'acme');
    const refused = [
      `sbk_${parsed?.prefix}_${'A'.repeat(43)}`,
      revoked.key,
      `sbk_000000000000_${parsed?.secret}`,
      `${key}x`,
      'sbk_short',
    ];
    for (const credential of refused) {
      const error: unknown = await auth.authenticate(`Bearer ${credential}`).catch((err: unknown) => err);
      expect(error).toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });
      expect(String(error)).not.toContain(credential);
      expect(String(error)).not.toContain(parsed?.secret);
    }
  });

  it('remember a verified key for 10 s: a revocation takes effect within that', async () => {
    let now = 1_000_000;
    const auth = createCallerAuthenticator({ apiKeys: repo(), now: () => now });
    const { key, record } = await newKey();
    await auth.authenticate(`Bearer ${key}`);
    await repo().revoke(record.id, 'acme');
    now += 9_999;
    await expect(auth.authenticate(`Bearer ${key}`)).resolves.toMatchObject({ keyId: record.id });
    now += 1;
    await expect(auth.authenticate(`Bearer ${key}`)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    // The memory is of that exact key: its prefix with another secret is checked afresh.
    const fresh = await newKey();
    await auth.authenticate(`Bearer ${fresh.key}`);
    const forged = `sbk_${parseApiKey(fresh.key)?.prefix}_${'B'.repeat(43)}`;
    await expect(auth.authenticate(`Bearer ${forged}`)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('cost one lookup for a burst of concurrent requests with a new key, wrong ones included', async () => {
    const store = repo();
    let lookups = 0;
    const counted = { verify: (key: string) => ((lookups += 1), store.verify(key)) };
    const auth = createCallerAuthenticator({ apiKeys: counted });
    const { key, record } = await newKey();
    const principals = await Promise.all(
      Array.from({ length: 100 }, () => auth.authenticate(`Bearer ${key}`)),
    );
    expect(principals.every((p) => p.keyId === record.id)).toBe(true);
    expect(lookups).toBe(1);
    const wrong = `sbk_${parseApiKey(key)?.prefix}_${'C'.repeat(43)}`;
    const refused = await Promise.allSettled(
      Array.from({ length: 20 }, () => auth.authenticate(`Bearer ${wrong}`)),
    );
    expect(refused.every((r) => r.status === 'rejected')).toBe(true);
    expect(lookups).toBe(2);
    // A wrong key is never remembered: the next try is looked up again.
    await expect(auth.authenticate(`Bearer ${wrong}`)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(lookups).toBe(3);
  });

  it('are read from a Bearer header only', async () => {
    const auth = createCallerAuthenticator({ apiKeys: repo() });
    const { key } = await newKey();
    await expect(auth.authenticate(`bearer ${key}`)).resolves.toMatchObject({ id: 'ci-bot' });
    for (const header of [undefined, '', key, `Basic ${key}`, `Bearer`, `Bearer ${key} extra`]) {
      await expect(auth.authenticate(header)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    }
  });

  describe('and bearer tokens that are not API keys', () => {
    let issuer: TestOidcIssuer;
    beforeAll(async () => {
      issuer = await startTestOidcIssuer();
    });
    afterAll(() => issuer.close());

    it('are OIDC access tokens when an issuer is configured', async () => {
      const oidc = createOidcVerifier({
        issuer: issuer.issuer,
        audience: issuer.audience,
        jwksUri: issuer.jwksUri,
      });
      const auth = createCallerAuthenticator({ apiKeys: repo(), oidc });
      const token = issuer.sign({ sub: 'alice', scope: 'write:sandbox' }, { alg: 'ES256' });
      const principal = await auth.authenticate(`Bearer ${token}`);
      expect(principal).toMatchObject({ id: 'alice', via: 'oidc' });
      expect([...principal.scopes]).toEqual(['write:sandbox']);
    });

    it('are refused when no issuer is configured', async () => {
      const auth = createCallerAuthenticator({ apiKeys: repo() });
      await expect(auth.authenticate(`Bearer ${issuer.sign()}`)).rejects.toMatchObject({
        code: 'UNAUTHENTICATED',
        message: expect.stringContaining('API key'),
      });
    });
  });
});
