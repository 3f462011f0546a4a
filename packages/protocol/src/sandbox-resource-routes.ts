// The sandbox resource API's entries of the route table (ROUTES spreads them in), so the
// OpenAPI document covers `/v1/sandboxes…` (docs/sandboxes.md). The PTY socket
// (`WS /v1/sandboxes/{id}/sessions/{sid}`) is not an HTTP route and is documented there.
import { z } from 'zod';
import { CommandLogPage, CommandLogQuery } from './command-log.js';
import { ExecResponse, ProcessStartResponse } from './dataplane-exec.js';
import type { ErrorCode } from './errors.js';
import type { RouteSpec } from './routes.js';
import {
  CreateSandboxRequest,
  SandboxFileQuery,
  SandboxListQuery,
  SandboxPage,
  SandboxPathParams,
  SandboxResource,
  UpdateSandboxRequest,
} from './sandbox-resources.js';

const BASE = [
  'BAD_REQUEST',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'RATE_LIMITED',
] as const satisfies readonly ErrorCode[];
const ONE = [...BASE, 'SANDBOX_NOT_FOUND'] as const satisfies readonly ErrorCode[];
const RELAYED = [...ONE, 'CONFLICT', 'PROVIDER_UNAVAILABLE'] as const satisfies readonly ErrorCode[];

/** `background: true` starts a process (ProcessStartRequest fields); otherwise an exec (ExecRequest fields). */
export const SandboxCommandRequest = z
  .looseObject({ background: z.boolean().optional() })
  .describe('ExecRequest fields, or ProcessStartRequest fields with background: true');

export const SANDBOX_RESOURCE_ROUTES = {
  listSandboxes: {
    method: 'GET',
    path: '/v1/sandboxes',
    summary: "The caller's sandboxes (read:sandbox), newest first, cursor-paginated",
    params: z.strictObject({}),
    query: SandboxListQuery,
    response: SandboxPage,
    errors: BASE,
  },
  createSandbox: {
    method: 'POST',
    path: '/v1/sandboxes',
    summary: 'Create a sandbox (write:sandbox), optionally bound to a thread',
    params: z.strictObject({}),
    body: CreateSandboxRequest,
    status: 201,
    response: SandboxResource,
    errors: [...BASE, 'BINDING_CONFLICT', 'PROVIDER_UNAVAILABLE'],
  },
  getSandbox: {
    method: 'GET',
    path: '/v1/sandboxes/{id}',
    summary: 'Inspect a sandbox (read:sandbox)',
    params: SandboxPathParams,
    response: SandboxResource,
    errors: ONE,
  },
  updateSandbox: {
    method: 'PATCH',
    path: '/v1/sandboxes/{id}',
    summary: 'Rename a sandbox or replace its metadata (write:sandbox)',
    params: SandboxPathParams,
    body: UpdateSandboxRequest,
    response: SandboxResource,
    errors: ONE,
  },
  startSandbox: {
    method: 'POST',
    path: '/v1/sandboxes/{id}/start',
    summary: 'Resume a stopped sandbox with its workspace (write:sandbox)',
    params: SandboxPathParams,
    response: SandboxResource,
    errors: [...ONE, 'CONFLICT', 'PROVIDER_UNAVAILABLE'],
  },
  stopSandbox: {
    method: 'POST',
    path: '/v1/sandboxes/{id}/stop',
    summary: 'Suspend a sandbox; its workspace stays (write:sandbox)',
    params: SandboxPathParams,
    response: SandboxResource,
    errors: [...ONE, 'CONFLICT', 'PROVIDER_UNAVAILABLE'],
  },
  deleteSandbox: {
    method: 'DELETE',
    path: '/v1/sandboxes/{id}',
    summary: 'End a sandbox and delete its workspace (write:sandbox); idempotent',
    params: SandboxPathParams,
    errors: [...ONE, 'CONFLICT', 'PROVIDER_UNAVAILABLE'],
  },
  sandboxLogs: {
    method: 'GET',
    path: '/v1/sandboxes/{id}/logs',
    summary: "The sandbox agent's command log (read:sandbox), relayed",
    params: SandboxPathParams,
    query: CommandLogQuery,
    response: CommandLogPage,
    errors: RELAYED,
  },
  downloadSandboxFile: {
    method: 'GET',
    path: '/v1/sandboxes/{id}/files',
    summary: 'Download a file (read:sandbox), streamed through the broker; Range supported',
    params: SandboxPathParams,
    query: SandboxFileQuery,
    produces: ['application/octet-stream'],
    errors: [...RELAYED, 'NOT_FOUND'],
  },
  uploadSandboxFile: {
    method: 'POST',
    path: '/v1/sandboxes/{id}/files',
    summary: 'Upload a file (write:sandbox): the raw body, streamed to the agent',
    params: SandboxPathParams,
    query: SandboxFileQuery,
    errors: [...RELAYED, 'PAYLOAD_TOO_LARGE', 'INSUFFICIENT_STORAGE'],
  },
  runSandboxCommand: {
    method: 'POST',
    path: '/v1/sandboxes/{id}/commands',
    summary: 'Run a command to completion, or start it in the background (exec:sandbox), relayed',
    params: SandboxPathParams,
    body: SandboxCommandRequest,
    response: z.union([ExecResponse, ProcessStartResponse]),
    errors: RELAYED,
  },
} as const satisfies Record<string, RouteSpec>;
