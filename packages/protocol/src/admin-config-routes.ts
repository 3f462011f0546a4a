// The admin API's policy, API-key and audit routes (spread into ADMIN_ROUTES).
import { z } from 'zod';
import { AdminActionRequest, AdminIdParams } from './admin.js';
import {
  ApiKeyPage,
  ApiKeyQuery,
  AuditExportQuery,
  AuditPage,
  AuditQuery,
  ClientPathParams,
  ClientPolicy,
  ClientPolicyUpdate,
  CreateApiKeyRequest,
  CreatedApiKeyResponse,
  TenantPathParams,
  TenantPolicy,
  TenantPolicyUpdate,
} from './admin-policy.js';
import type { ErrorCode } from './errors.js';
import type { RouteSpec } from './routes.js';

const NoParams = z.strictObject({});
/** What every admin route may answer: FORBIDDEN without admin:sandbox, or past the API-key grant rule. */
export const ADMIN_ERRORS = [
  'BAD_REQUEST',
  'UNAUTHENTICATED',
  'FORBIDDEN',
] as const satisfies readonly ErrorCode[];
const BASE = ADMIN_ERRORS;

export const ADMIN_CONFIG_ROUTES = {
  adminGetTenantPolicy: {
    method: 'GET',
    path: '/admin/tenants/{tenant_id}/policy',
    summary: "A tenant's policy (the defaults when none is stored)",
    params: TenantPathParams,
    response: TenantPolicy,
    errors: BASE,
  },
  adminPutTenantPolicy: {
    method: 'PUT',
    path: '/admin/tenants/{tenant_id}/policy',
    summary: "Set fields of a tenant's policy; the next negotiation uses them",
    params: TenantPathParams,
    body: TenantPolicyUpdate,
    response: TenantPolicy,
    errors: BASE,
  },
  adminGetClientPolicy: {
    method: 'GET',
    path: '/admin/clients/{client_id}/policy',
    summary: "An OAuth client's policy (the defaults when none is stored)",
    params: ClientPathParams,
    response: ClientPolicy,
    errors: BASE,
  },
  adminPutClientPolicy: {
    method: 'PUT',
    path: '/admin/clients/{client_id}/policy',
    summary: "Set fields of an OAuth client's policy; the next negotiation uses them",
    params: ClientPathParams,
    body: ClientPolicyUpdate,
    response: ClientPolicy,
    errors: BASE,
  },
  adminCreateApiKey: {
    method: 'POST',
    path: '/admin/api-keys',
    summary:
      'Create an API key; the key is in this answer only. Only caller scopes the caller holds; ' +
      'another tenant or principal needs admin:keys',
    params: NoParams,
    body: CreateApiKeyRequest,
    status: 201,
    response: CreatedApiKeyResponse,
    errors: BASE,
  },
  adminListApiKeys: {
    method: 'GET',
    path: '/admin/api-keys',
    summary: 'API keys (never their secret), newest first, cursor-paginated',
    params: NoParams,
    query: ApiKeyQuery,
    response: ApiKeyPage,
    errors: BASE,
  },
  adminRevokeApiKey: {
    method: 'DELETE',
    path: '/admin/api-keys/{id}',
    summary: 'Revoke an API key (idempotent)',
    params: AdminIdParams,
    errors: [...BASE, 'NOT_FOUND'],
  },
  adminRotateApiKey: {
    method: 'POST',
    path: '/admin/api-keys/{id}/rotate',
    summary:
      'Replace an API key by a new one with the same identity; the old one is revoked. ' +
      'Same rule as create: the caller holds its scopes, and needs admin:keys unless the key is its own',
    params: AdminIdParams,
    body: AdminActionRequest,
    status: 201,
    response: CreatedApiKeyResponse,
    errors: [...BASE, 'NOT_FOUND', 'CONFLICT'],
  },
  adminAudit: {
    method: 'GET',
    path: '/admin/audit',
    summary: 'Audit events of every tenant, filtered, newest first, cursor-paginated',
    params: NoParams,
    query: AuditQuery,
    response: AuditPage,
    errors: BASE,
  },
  adminAuditExport: {
    method: 'GET',
    path: '/admin/audit/export',
    summary: 'The audit selection streamed as JSON lines (one AdminAuditEvent a line) or CSV',
    params: NoParams,
    query: AuditExportQuery,
    produces: ['application/x-ndjson', 'text/csv'],
    errors: BASE,
  },
} as const satisfies Record<string, RouteSpec>;
