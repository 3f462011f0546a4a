// `/admin/tenants/{tenant_id}/policy`, `/admin/clients/{client_id}/policy`,
// `/admin/api-keys…` and `/admin/audit`. Policies are written through the same
// PolicyRepository the session service reads (its cache entry is dropped on
// write), so the next negotiation on this broker uses them; other brokers
// within the policy cache's 5 s.
import { Router, type RequestHandler } from 'express';
import {
  AdminActionRequest,
  AdminIdParams,
  ApiKeyQuery,
  AuditQuery,
  ClientPathParams,
  ClientPolicyUpdate,
  CreateApiKeyRequest,
  TenantPathParams,
  TenantPolicyUpdate,
} from '@sbx/protocol';
import type { AdminApiKeys } from '../../domain/admin/admin-api-keys.js';
import type { AdminAudit } from '../../domain/admin/admin-audit.js';
import { decodeAuditCursor, encodeAuditCursor, encodePosition } from '../../domain/admin/admin-cursor.js';
import { toApiKeyView, toAuditEvent } from '../../domain/admin/admin-presenter.js';
import {
  clientPatch,
  tenantPatch,
  toClientPolicy,
  toTenantPolicy,
} from '../../domain/admin/policy-presenter.js';
import type { AdminAuditQueries } from '../../store/admin-audit-queries.js';
import type { PolicyRepository } from '../../store/policy-repository.js';
import { adminBodyOf, adminRoute, noTarget, paramsOf, queryOf, targetParam } from './admin-kit.js';

export interface AdminConfigRoutesDeps {
  readonly authenticate: RequestHandler;
  readonly audit: AdminAudit;
  readonly policies: Pick<
    PolicyRepository,
    'getTenantPolicy' | 'upsertTenantPolicy' | 'getClientPolicy' | 'upsertClientPolicy'
  >;
  readonly keys: AdminApiKeys;
  readonly auditQueries: AdminAuditQueries;
}

const date = (value: string | undefined): Date | undefined =>
  value === undefined ? undefined : new Date(value);

export function adminConfigRoutes(deps: AdminConfigRoutesDeps): Router {
  const { authenticate, audit, policies, keys } = deps;
  const router = Router();
  const tenant = targetParam('tenant', 'tenant_id');
  const client = targetParam('client', 'client_id');
  const apiKey = targetParam('api_key', 'id');
  const TENANT = '/admin/tenants/:tenant_id/policy';
  const CLIENT = '/admin/clients/:client_id/policy';

  router.get(
    TENANT,
    authenticate,
    adminRoute(audit, 'admin.tenant_policy.get', tenant, async (req) => {
      const { tenant_id } = paramsOf(TenantPathParams, req);
      return { status: 200, body: toTenantPolicy(await policies.getTenantPolicy(tenant_id)) };
    }),
  );
  router.put(
    TENANT,
    authenticate,
    adminRoute(audit, 'admin.tenant_policy.put', tenant, async (req) => {
      const { tenant_id } = paramsOf(TenantPathParams, req);
      const patch = tenantPatch(adminBodyOf(TenantPolicyUpdate, req));
      return { status: 200, body: toTenantPolicy(await policies.upsertTenantPolicy(tenant_id, patch)) };
    }),
  );
  router.get(
    CLIENT,
    authenticate,
    adminRoute(audit, 'admin.client_policy.get', client, async (req) => {
      const { client_id } = paramsOf(ClientPathParams, req);
      return { status: 200, body: toClientPolicy(await policies.getClientPolicy(client_id)) };
    }),
  );
  router.put(
    CLIENT,
    authenticate,
    adminRoute(audit, 'admin.client_policy.put', client, async (req) => {
      const { client_id } = paramsOf(ClientPathParams, req);
      const patch = clientPatch(adminBodyOf(ClientPolicyUpdate, req));
      return { status: 200, body: toClientPolicy(await policies.upsertClientPolicy(client_id, patch)) };
    }),
  );

  router.post(
    '/admin/api-keys',
    authenticate,
    adminRoute(audit, 'admin.api_key.create', noTarget, async (req, { principal }) => ({
      status: 201,
      body: await keys.create(adminBodyOf(CreateApiKeyRequest, req), principal),
    })),
  );
  router.get(
    '/admin/api-keys',
    authenticate,
    adminRoute(audit, 'admin.api_key.list', noTarget, async (req) => {
      const page = await keys.list(queryOf(ApiKeyQuery, req));
      return {
        status: 200,
        body: { items: page.items.map(toApiKeyView), next_cursor: encodePosition('api-keys', page.next) },
      };
    }),
  );
  router.delete(
    '/admin/api-keys/:id',
    authenticate,
    adminRoute(audit, 'admin.api_key.revoke', apiKey, async (req) => {
      await keys.revoke(paramsOf(AdminIdParams, req).id);
      return { status: 204 };
    }),
  );
  router.post(
    '/admin/api-keys/:id/rotate',
    authenticate,
    adminRoute(audit, 'admin.api_key.rotate', apiKey, async (req, { principal }) => {
      const { id } = paramsOf(AdminIdParams, req);
      adminBodyOf(AdminActionRequest, req);
      return { status: 201, body: await keys.rotate(id, principal) };
    }),
  );

  router.get(
    '/admin/audit',
    authenticate,
    adminRoute(audit, 'admin.audit.query', noTarget, async (req) => {
      const query = queryOf(AuditQuery, req);
      const page = await deps.auditQueries.list(
        {
          tenantId: query.tenant_id,
          action: query.action,
          outcome: query.outcome,
          callerId: query.caller_id,
          sandboxId: query.sandbox_id,
          sessionId: query.session_id,
          since: date(query.since),
          until: date(query.until),
        },
        { beforeId: decodeAuditCursor(query.cursor), limit: query.limit },
      );
      const body = { items: page.items.map(toAuditEvent), next_cursor: encodeAuditCursor(page.nextBeforeId) };
      return { status: 200, body };
    }),
  );

  return router;
}
