import { describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { AuditRepository } from '../../src/store/audit-repository.js';
import {
  DEFAULT_CLIENT_POLICY,
  DEFAULT_TENANT_POLICY,
  PolicyRepository,
} from '../../src/store/policy-repository.js';
import { TokenIssuanceRepository } from '../../src/store/token-issuance-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { uid } from './fixtures.js';

// One database per backend for the three small repositories: PGlite takes seconds to start.
describeEachBackend('policies, audit and token issuances', (backend) => {
  const db = useTestDatabase(backend);

  describe('PolicyRepository', () => {
    const repo = () => new PolicyRepository(db().prisma);

    it('gives a tenant without a row the defaults, which match the column defaults', async () => {
      const tenantId = uid('tenant');
      expect(await repo().getTenantPolicy(tenantId)).toEqual({
        tenantId,
        ...DEFAULT_TENANT_POLICY,
        updatedAt: null,
      });
      await db().prisma.tenantPolicy.create({ data: { tenantId } });
      const { updatedAt, ...stored } = await repo().getTenantPolicy(tenantId);
      expect(stored).toEqual({ tenantId, ...DEFAULT_TENANT_POLICY });
      expect(updatedAt).toBeInstanceOf(Date);
    });

    it('upserts a tenant policy, keeping the fields a patch leaves out', async () => {
      const tenantId = uid('tenant');
      const created = await repo().upsertTenantPolicy(tenantId, {
        maxSandboxes: 2,
        environment: 'internal_only',
      });
      expect(created).toMatchObject({ maxSandboxes: 2, environment: 'internal_only', hardTtlSeconds: 28800 });
      const updated = await repo().upsertTenantPolicy(tenantId, {
        sandboxEnabled: false,
        maxSandboxes: undefined,
      });
      expect(updated).toMatchObject({ maxSandboxes: 2, environment: 'internal_only', sandboxEnabled: false });
      expect(await repo().getTenantPolicy(tenantId)).toEqual(updated);
    });

    it('gives a client without a row the defaults, which match the column defaults', async () => {
      const clientId = uid('client');
      expect(await repo().getClientPolicy(clientId)).toEqual({
        clientId,
        ...DEFAULT_CLIENT_POLICY,
        updatedAt: null,
      });
      await db().prisma.clientPolicy.create({ data: { clientId, sidecarScopes: [], maxCapabilities: [] } });
      const { updatedAt, ...stored } = await repo().getClientPolicy(clientId);
      expect(stored).toEqual({ clientId, ...DEFAULT_CLIENT_POLICY });
      expect(updatedAt).toBeInstanceOf(Date);
    });

    it('upserts a client policy with its sandbox environment', async () => {
      const clientId = uid('client');
      const created = await repo().upsertClientPolicy(clientId, {
        sidecarImage: 'registry.local/sidecar:1',
        sandboxEnv: { ANTHROPIC_BASE_URL: 'http://proxy.internal' },
        maxCapabilities: ['fs:rw', 'shell'],
      });
      expect(created).toMatchObject({
        sidecarImage: 'registry.local/sidecar:1',
        sidecarScopes: [],
        sandboxEnv: { ANTHROPIC_BASE_URL: 'http://proxy.internal' },
        maxCapabilities: ['fs:rw', 'shell'],
      });
      const updated = await repo().upsertClientPolicy(clientId, { sidecarScopes: ['llm:proxy'] });
      expect(updated).toMatchObject({
        sidecarImage: 'registry.local/sidecar:1',
        sidecarScopes: ['llm:proxy'],
      });
      expect(updated.maxCapabilities).toEqual(['fs:rw', 'shell']);
      expect(await repo().getClientPolicy(clientId)).toEqual(updated);
    });
  });

  describe('AuditRepository', () => {
    const repo = () => new AuditRepository(db().prisma);

    it('lists a sandbox’s and a session’s events in the order they were appended', async () => {
      const sandboxId = uid('sbx');
      const sessionId = uid('sess');
      const actions = [
        'sandbox.create',
        'session.bind',
        'token.issue',
        'session.release',
        'sandbox.terminate',
      ];
      // Same timestamp for all: order must come from the append order, not the clock.
      const at = new Date('2030-04-04T04:04:04.004Z');
      for (const action of actions) {
        await repo().append({
          action,
          outcome: 'ok',
          at,
          sandboxId,
          ...(action.startsWith('session') || action === 'token.issue' ? { sessionId } : {}),
          scopes: ['fs:ro'],
          detail: { step: action },
        });
      }
      await repo().append({ action: 'other', outcome: 'ok', sandboxId: uid('sbx') });

      const bySandbox = await repo().listBySandbox(sandboxId);
      expect(bySandbox.map((e) => e.action)).toEqual(actions);
      expect(bySandbox[1]).toMatchObject({
        sessionId,
        scopes: ['fs:ro'],
        detail: { step: 'session.bind' },
        at,
      });
      expect(typeof bySandbox[0]?.id).toBe('string');
      expect(() => JSON.stringify(bySandbox)).not.toThrow();

      const bySession = await repo().listBySession(sessionId);
      expect(bySession.map((e) => e.action)).toEqual(['session.bind', 'token.issue', 'session.release']);
    });

    it('pages with afterId and limit', async () => {
      const sandboxId = uid('sbx');
      for (let i = 0; i < 5; i++) await repo().append({ action: `a${i}`, outcome: 'ok', sandboxId });
      const first = await repo().listBySandbox(sandboxId, { limit: 2 });
      expect(first.map((e) => e.action)).toEqual(['a0', 'a1']);
      const next = await repo().listBySandbox(sandboxId, { afterId: first[1]?.id ?? '', limit: 2 });
      expect(next.map((e) => e.action)).toEqual(['a2', 'a3']);
      await expect(repo().listBySandbox(sandboxId, { afterId: 'x; drop' })).rejects.toMatchObject({
        code: 'BAD_REQUEST',
      });
    });
  });

  describe('TokenIssuanceRepository', () => {
    const repo = () => new TokenIssuanceRepository(db().prisma);

    it('records an issuance and finds it by jti', async () => {
      const jti = uid('jti');
      const expiresAt = new Date('2030-06-06T06:06:06.006Z');
      await repo().record({
        jti,
        subject: 'user:alice',
        audience: 'sandbox:sbx_1',
        scopes: ['fs:ro', 'shell'],
        sessionId: 'sess_1',
        expiresAt,
      });
      expect(await repo().findByJti(jti)).toMatchObject({
        jti,
        subject: 'user:alice',
        audience: 'sandbox:sbx_1',
        scopes: ['fs:ro', 'shell'],
        sessionId: 'sess_1',
        threadId: null,
        expiresAt,
      });
      expect(await repo().findByJti(uid('missing'))).toBeNull();
    });

    it('refuses a second issuance with the same jti', async () => {
      const input = { jti: uid('jti'), subject: 's', audience: 'a', scopes: [], expiresAt: new Date() };
      await repo().record(input);
      const failure = await repo()
        .record(input)
        .catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(SbxError);
      expect(failure).toMatchObject({ code: 'CONFLICT' });
    });
  });
});
