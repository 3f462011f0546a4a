/**
 * The calls the execute_code suite makes, over the bench's node:http client (the same one
 * for the tool path and its floors, so the client's cost cancels out). A failed call throws
 * with its status and error body only: a 200 may carry a token and is never printed.
 */
import type { Agent } from 'node:http';
import type { CodeRunResponse, ExecResponse, ExecuteCodeResult, ThreadSandboxResponse } from '@sbx/protocol';
import { request, type Reply } from '../lib/http-client.js';

export type Language = 'python' | 'bash';

/** What the broker sends its agent for a snippet (execute-code-service.ts, code-runner.ts). */
export const TIMEOUT_MS = 30_000;

async function call(
  url: string,
  key: string,
  method: 'POST' | 'PUT',
  body: unknown,
  agent?: Agent,
): Promise<Reply> {
  const reply = await request(url, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(agent === undefined ? {} : { agent }),
  });
  if (reply.status !== 200 && reply.status !== 201)
    throw new Error(
      `${method} ${new URL(url).pathname} answered ${reply.status}: ${reply.text.slice(0, 300)}`,
    );
  return reply;
}

/** `POST /threads/{thread}/sandbox {scopes}`: negotiates (ensures) the thread's sandbox. */
export async function negotiateThread(
  brokerUrl: string,
  key: string,
  threadId: string,
  agent?: Agent,
): Promise<ThreadSandboxResponse> {
  const url = `${brokerUrl}/threads/${threadId}/sandbox`;
  return JSON.parse(
    (await call(url, key, 'POST', { scopes: ['process'] }, agent)).text,
  ) as ThreadSandboxResponse;
}

/** `POST /v1/execute_code`; throws unless the code ran and exited 0. */
export async function executeCode(
  brokerUrl: string,
  key: string,
  body: { thread_id: string; language: Language; code: string },
  agent?: Agent,
): Promise<ExecuteCodeResult> {
  const reply = await call(
    `${brokerUrl}/v1/execute_code`,
    key,
    'POST',
    { ...body, timeout_ms: TIMEOUT_MS },
    agent,
  );
  const result = JSON.parse(reply.text) as ExecuteCodeResult;
  if (!result.ok)
    throw new Error(`execute_code: ${result.exit_status} ${result.error_message ?? result.stderr}`);
  return result;
}

/** `POST {agent}/v1/code` with a capability token, as the broker calls it; throws unless ok. */
export async function runCode(
  agentUrl: string,
  token: string,
  body: { language: Language; code: string; memory_limit_mb: number },
  agent?: Agent,
): Promise<CodeRunResponse> {
  const reply = await call(`${agentUrl}/v1/code`, token, 'POST', { ...body, timeout_ms: TIMEOUT_MS }, agent);
  const result = JSON.parse(reply.text) as CodeRunResponse;
  if (result.exit_status !== 'ok') throw new Error(`/v1/code: ${result.exit_status} ${result.stderr}`);
  return result;
}

/** `POST {agent}/v1/exec {cmd}`; throws unless it exited 0. */
export async function runExec(
  agentUrl: string,
  token: string,
  cmd: string,
  agent?: Agent,
): Promise<ExecResponse> {
  const reply = await call(`${agentUrl}/v1/exec`, token, 'POST', { cmd, timeout_ms: TIMEOUT_MS }, agent);
  const result = JSON.parse(reply.text) as ExecResponse;
  if (result.exit_code !== 0) throw new Error(`/v1/exec: exit ${result.exit_code} ${result.stderr}`);
  return result;
}

/** `PUT /admin/tenants/{tenant}/policy` with the admin key; answers the whole policy. */
export async function putTenantPolicy(
  brokerUrl: string,
  adminKey: string,
  tenantId: string,
  patch: Record<string, number>,
): Promise<{ max_memory_mb: number }> {
  const reply = await call(`${brokerUrl}/admin/tenants/${tenantId}/policy`, adminKey, 'PUT', patch);
  return JSON.parse(reply.text) as { max_memory_mb: number };
}

/** `POST /admin/api-keys`: a key for an agent principal with the scopes execute_code needs. */
export async function createAgentKey(
  brokerUrl: string,
  adminKey: string,
  tenantId: string,
  principalId: string,
): Promise<string> {
  const reply = await call(`${brokerUrl}/admin/api-keys`, adminKey, 'POST', {
    tenant_id: tenantId,
    principal_id: principalId,
    principal_type: 'agent',
    scopes: ['exec:sandbox', 'write:sandbox'],
    name: 'bench execute_code',
  });
  return (JSON.parse(reply.text) as { key: string }).key;
}
