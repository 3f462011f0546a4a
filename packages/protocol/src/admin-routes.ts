// The admin API's entries of the route table (ROUTES spreads them in), so the
// OpenAPI document covers `/admin/*` (docs/admin.md). Every route answers 403
// FORBIDDEN to a caller without `admin:sandbox`.
import { z } from 'zod';
import {
  AdminActionRequest,
  AdminActionResponse,
  AdminIdParams,
  AdminSandboxDetail,
  AdminSandboxPage,
  AdminSandboxQuery,
  AdminSessionPage,
  AdminSessionQuery,
} from './admin.js';
import { ADMIN_CONFIG_ROUTES, ADMIN_ERRORS } from './admin-config-routes.js';
import { ADMIN_INVOCATION_ROUTES } from './admin-invocations.js';
import { ADMIN_USAGE_ROUTES } from './admin-usage.js';
import type { RouteSpec } from './routes.js';

const NoParams = z.strictObject({});
const BASE = ADMIN_ERRORS;
const ACTION = [...BASE, 'SANDBOX_NOT_FOUND', 'CONFLICT', 'PROVIDER_UNAVAILABLE'] as const;

const ADMIN_SANDBOX_ROUTES = {
  adminListSandboxes: {
    method: 'GET',
    path: '/admin/sandboxes',
    summary: 'Sandboxes of every tenant, filtered, newest first, cursor-paginated',
    params: NoParams,
    query: AdminSandboxQuery,
    response: AdminSandboxPage,
    errors: BASE,
  },
  adminGetSandbox: {
    method: 'GET',
    path: '/admin/sandboxes/{id}',
    summary: 'One sandbox in full: bindings, state history, tokens issued, recent audit',
    params: AdminIdParams,
    response: AdminSandboxDetail,
    errors: [...BASE, 'SANDBOX_NOT_FOUND'],
  },
  adminTerminateSandbox: {
    method: 'POST',
    path: '/admin/sandboxes/{id}/terminate',
    summary: 'Destroy the sandbox at its provider and end it with all its bindings',
    params: AdminIdParams,
    body: AdminActionRequest,
    response: AdminActionResponse,
    errors: ACTION,
  },
  adminRecoverSandbox: {
    method: 'POST',
    path: '/admin/sandboxes/{id}/recover',
    summary: "Force a sandbox past its state's deadline out of that state (409 before the deadline)",
    params: AdminIdParams,
    body: AdminActionRequest,
    response: AdminActionResponse,
    errors: ACTION,
  },
  adminListSessions: {
    method: 'GET',
    path: '/admin/sessions',
    summary: 'Sessions (bindings) of every tenant, filtered, newest first, cursor-paginated',
    params: NoParams,
    query: AdminSessionQuery,
    response: AdminSessionPage,
    errors: BASE,
  },
} as const satisfies Record<string, RouteSpec>;

export const ADMIN_ROUTES = {
  ...ADMIN_SANDBOX_ROUTES,
  ...ADMIN_CONFIG_ROUTES,
  ...ADMIN_USAGE_ROUTES,
  ...ADMIN_INVOCATION_ROUTES,
} as const satisfies Record<string, RouteSpec>;
