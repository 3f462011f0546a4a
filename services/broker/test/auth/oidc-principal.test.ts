import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createOidcVerifier, type OidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { DEFAULT_TENANT_ID, hasCallerScope } from '../../src/domain/auth/principal.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';

let issuer: TestOidcIssuer;
let verifier: OidcVerifier;
beforeAll(async () => {
  issuer = await startTestOidcIssuer();
  verifier = createOidcVerifier({
    issuer: issuer.issuer,
    audience: issuer.audience,
    jwksUri: issuer.jwksUri,
  });
});
afterAll(() => issuer.close());

const principalOf = (claims: Record<string, unknown>) => verifier.verify(issuer.sign(claims));

describe('the principal an OIDC token names', () => {
  it('is a user of the default tenant, owning its own resources, with its client id', async () => {
    const principal = await principalOf({ sub: 'alice', client_id: 'latere-cli' });
    expect(principal).toMatchObject({
      id: 'alice',
      ownerId: 'alice',
      type: 'user',
      tenantId: DEFAULT_TENANT_ID,
      clientId: 'latere-cli',
      via: 'oidc',
    });
    expect(principal.actingFor).toBeUndefined();
  });

  it('takes the tenant from tenant_id and the client from azp when client_id is absent', async () => {
    const principal = await principalOf({ sub: 'alice', tenant_id: 'acme', azp: 'dashboard' });
    expect(principal).toMatchObject({ tenantId: 'acme', clientId: 'dashboard' });
  });

  it('is a service for client credentials: gty, or sub equal to the client id', async () => {
    await expect(principalOf({ sub: 'svc-7', gty: 'client-credentials' })).resolves.toMatchObject({
      type: 'service',
      id: 'svc-7',
      ownerId: 'svc-7',
    });
    await expect(principalOf({ sub: 'wallfacer', client_id: 'wallfacer' })).resolves.toMatchObject({
      type: 'service',
    });
  });

  it('is an agent acting for its delegator when the token carries act (RFC 8693)', async () => {
    const principal = await principalOf({
      sub: 'alice',
      act: { sub: 'agent-42' },
      client_id: 'mcp-host',
      scope: 'read:sandbox exec:sandbox',
    });
    expect(principal).toMatchObject({
      type: 'agent',
      id: 'agent-42',
      ownerId: 'alice',
      actingFor: 'alice',
      actor: 'agent-42',
      clientId: 'mcp-host',
    });
  });

  it('refuses an act claim that names no actor', async () => {
    await expect(principalOf({ sub: 'alice', act: { client_id: 'x' } })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    await expect(principalOf({ sub: 'alice', act: 'agent-42' })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });

  it('keeps only caller scopes from the scope claim', async () => {
    const principal = await principalOf({
      scope: 'openid profile read:sandbox  exec:sandbox fs:rw shell admin:elsewhere',
    });
    expect([...principal.scopes].toSorted()).toEqual(['exec:sandbox', 'read:sandbox']);
    expect(hasCallerScope(principal, 'attach:sandbox')).toBe(false);
  });

  it('has no scopes when the token has no scope claim', async () => {
    expect((await principalOf({})).scopes.size).toBe(0);
  });

  it('refuses malformed identity claims', async () => {
    for (const claims of [{ sub: '' }, { sub: 42 }, { scope: ['read:sandbox'] }, { tenant_id: '' }]) {
      await expect(principalOf(claims)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    }
  });
});
