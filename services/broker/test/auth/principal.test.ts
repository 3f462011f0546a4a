import { describe, expect, it } from '@jest/globals';
import type { CallerScope } from '@sbx/protocol';
import {
  assertOwns,
  hasCallerScope,
  isAdmin,
  ownerFilter,
  type Principal,
} from '../../src/domain/auth/principal.js';

function principal(overrides: Partial<Principal> & { scopes?: ReadonlySet<CallerScope> } = {}): Principal {
  return {
    tenantId: 'acme',
    id: 'alice',
    ownerId: 'alice',
    type: 'user',
    scopes: new Set(),
    via: 'oidc',
    ...overrides,
  };
}

const aliceSandbox = { id: 'sbx_1', tenantId: 'acme', ownerId: 'alice' };
const bobSandbox = { id: 'sbx_2', tenantId: 'acme', ownerId: 'bob' };
const otherTenantAlice = { id: 'sbx_3', tenantId: 'globex', ownerId: 'alice' };

describe('caller scopes', () => {
  it('grants exactly the scopes held: exec does not imply attach, nor admin anything else', () => {
    const exec = principal({ scopes: new Set<CallerScope>(['exec:sandbox']) });
    expect(hasCallerScope(exec, 'exec:sandbox')).toBe(true);
    expect(hasCallerScope(exec, 'attach:sandbox')).toBe(false);
    const admin = principal({ scopes: new Set<CallerScope>(['admin:sandbox']) });
    expect(isAdmin(admin)).toBe(true);
    expect(hasCallerScope(admin, 'attach:sandbox')).toBe(false);
    expect(hasCallerScope(admin, 'read:sandbox')).toBe(false);
    expect(isAdmin(exec)).toBe(false);
  });
});

describe('owner scoping', () => {
  it('filters listings to the caller’s tenant and owner; an admin sees all', () => {
    expect(ownerFilter(principal())).toEqual({ tenantId: 'acme', ownerId: 'alice' });
    expect(ownerFilter(principal({ scopes: new Set<CallerScope>(['admin:sandbox']) }))).toBe('all');
  });

  it('lets the owner through and answers anyone else as if the resource did not exist', () => {
    const alice = principal();
    expect(() =>
      assertOwns(alice, aliceSandbox, 'SANDBOX_NOT_FOUND', 'sandbox sbx_1 does not exist'),
    ).not.toThrow();
    for (const resource of [bobSandbox, otherTenantAlice, null, undefined]) {
      expect(() => assertOwns(alice, resource, 'SANDBOX_NOT_FOUND', 'sandbox does not exist')).toThrow(
        expect.objectContaining({
          code: 'SANDBOX_NOT_FOUND',
          status: 404,
          message: 'sandbox does not exist',
        }),
      );
    }
  });

  it('raises the code the caller names, so sessions and sandboxes answer in their own words', () => {
    expect(() => assertOwns(principal(), bobSandbox, 'SESSION_NOT_FOUND', 'no such session')).toThrow(
      expect.objectContaining({ code: 'SESSION_NOT_FOUND', status: 404 }),
    );
  });

  it('scopes a delegated agent to its delegator’s resources, not its own', () => {
    const agent = principal({
      id: 'agent-42',
      type: 'agent',
      ownerId: 'alice',
      actingFor: 'alice',
      actor: 'agent-42',
    });
    expect(() => assertOwns(agent, aliceSandbox, 'SANDBOX_NOT_FOUND', 'gone')).not.toThrow();
    const agentOwned = { tenantId: 'acme', ownerId: 'agent-42' };
    expect(() => assertOwns(agent, agentOwned, 'SANDBOX_NOT_FOUND', 'gone')).toThrow(
      expect.objectContaining({ status: 404 }),
    );
  });

  it('lets an admin reach any owner in any tenant, but not a resource that does not exist', () => {
    const admin = principal({ id: 'ops', ownerId: 'ops', scopes: new Set<CallerScope>(['admin:sandbox']) });
    for (const resource of [aliceSandbox, bobSandbox, otherTenantAlice]) {
      expect(() => assertOwns(admin, resource, 'SANDBOX_NOT_FOUND', 'gone')).not.toThrow();
    }
    expect(() => assertOwns(admin, null, 'SANDBOX_NOT_FOUND', 'gone')).toThrow(
      expect.objectContaining({ code: 'SANDBOX_NOT_FOUND' }),
    );
  });
});
