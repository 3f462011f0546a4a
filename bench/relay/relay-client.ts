/**
 * The calls the relay suite makes, all over the bench's node:http client (bench/lib) with a
 * kept-alive connection per path, so the client's own cost is the same on both sides of a
 * ratio. A failed call throws with its status and error body only: an answer that may carry
 * a token is never printed.
 */
import type { Agent } from 'node:http';
import type { ExecResponse, ThreadSandboxResponse } from '@sbx/protocol';
import { request, type Reply } from '../lib/http-client.js';

/** The body both exec paths send: the least a command can do. */
export const EXEC_BODY = JSON.stringify({ cmd: 'true' });

export interface DirectAccess {
  readonly sandboxId: string;
  /** The agent's `endpoints.http`. */
  readonly agentUrl: string;
  /** A capability token with fs:rw + process. */
  readonly token: string;
}

function expectStatus(reply: Reply, what: string, ...ok: number[]): Reply {
  if (!ok.includes(reply.status))
    throw new Error(`${what} answered ${reply.status}: ${reply.text.slice(0, 300)}`);
  return reply;
}

async function postJson(url: string, key: string, body: string, agent?: Agent): Promise<Reply> {
  return request(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
    ...(agent === undefined ? {} : { agent }),
  });
}

/** `POST /admin/api-keys` with the admin key; answers the new key's secret. */
export async function createKey(brokerUrl: string, adminKey: string, body: object): Promise<string> {
  const reply = await postJson(`${brokerUrl}/admin/api-keys`, adminKey, JSON.stringify(body));
  return (JSON.parse(expectStatus(reply, 'POST /admin/api-keys', 201, 200).text) as { key: string }).key;
}

/** `POST /v1/sandboxes {thread_id}`: a sandbox bound to the thread; answers its id. */
export async function createSandbox(brokerUrl: string, key: string, threadId: string): Promise<string> {
  const reply = await postJson(`${brokerUrl}/v1/sandboxes`, key, JSON.stringify({ thread_id: threadId }));
  return (JSON.parse(expectStatus(reply, 'POST /v1/sandboxes', 201).text) as { id: string }).id;
}

export async function deleteSandbox(brokerUrl: string, key: string, sandboxId: string): Promise<void> {
  const reply = await request(`${brokerUrl}/v1/sandboxes/${sandboxId}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${key}` },
  });
  expectStatus(reply, 'DELETE /v1/sandboxes/{id}', 204);
}

/** `POST /threads/{thread}/sandbox {scopes: ['fs:rw', 'process']}`: the agent and a token for it. */
export async function negotiateDirect(
  brokerUrl: string,
  key: string,
  threadId: string,
): Promise<DirectAccess> {
  const body = JSON.stringify({ scopes: ['fs:rw', 'process'] });
  const reply = await postJson(`${brokerUrl}/threads/${threadId}/sandbox`, key, body);
  const answer = JSON.parse(
    expectStatus(reply, 'POST /threads/{t}/sandbox', 200, 201).text,
  ) as ThreadSandboxResponse;
  if (!(answer.scopes.includes('fs:rw') && answer.scopes.includes('process')))
    throw new Error(`the thread route granted ${answer.scopes.join(', ')}, not fs:rw + process`);
  return { sandboxId: answer.sandbox_id, agentUrl: answer.endpoints.http, token: answer.token };
}

function execResult(reply: Reply, what: string): ExecResponse {
  const result = JSON.parse(expectStatus(reply, what, 200).text) as ExecResponse;
  if (result.exit_code !== 0)
    throw new Error(`${what}: exit ${result.exit_code} ${result.stderr.slice(0, 200)}`);
  return result;
}

/** `POST /v1/sandboxes/{id}/commands {cmd: 'true'}` through the broker; answers the agent's answer. */
export async function relayExec(
  brokerUrl: string,
  key: string,
  sandboxId: string,
  agent?: Agent,
): Promise<ExecResponse> {
  const what = 'POST /v1/sandboxes/{id}/commands';
  return execResult(
    await postJson(`${brokerUrl}/v1/sandboxes/${sandboxId}/commands`, key, EXEC_BODY, agent),
    what,
  );
}

/** `POST {agent}/v1/exec {cmd: 'true'}` straight to the agent. */
export async function directExec(access: DirectAccess, agent?: Agent): Promise<ExecResponse> {
  return execResult(
    await postJson(`${access.agentUrl}/v1/exec`, access.token, EXEC_BODY, agent),
    'POST {agent}/v1/exec',
  );
}

/** Any command through the agent directly (set-up: the download's file). */
export async function directCommand(
  access: DirectAccess,
  cmd: string,
  timeoutMs: number,
): Promise<ExecResponse> {
  const body = JSON.stringify({ cmd, timeout_ms: timeoutMs });
  return execResult(await postJson(`${access.agentUrl}/v1/exec`, access.token, body), `exec ${cmd}`);
}

/** `GET /v1/sandboxes/{id}`: the broker's read-only path (auth, rate limit, one lookup), a stage. */
export async function getSandbox(
  brokerUrl: string,
  key: string,
  sandboxId: string,
  agent?: Agent,
): Promise<void> {
  const reply = await request(`${brokerUrl}/v1/sandboxes/${sandboxId}`, {
    headers: { authorization: `Bearer ${key}` },
    ...(agent === undefined ? {} : { agent }),
  });
  expectStatus(reply, 'GET /v1/sandboxes/{id}', 200);
}

/** A GET whose body is counted, never kept; answers the byte count. */
async function download(url: string, token: string, what: string, agent?: Agent): Promise<number> {
  const reply = await request(url, {
    headers: { authorization: `Bearer ${token}` },
    countOnly: true,
    ...(agent === undefined ? {} : { agent }),
  });
  return expectStatus(reply, what, 200).bytes;
}

export function relayDownload(
  brokerUrl: string,
  key: string,
  sandboxId: string,
  path: string,
  agent?: Agent,
): Promise<number> {
  const url = `${brokerUrl}/v1/sandboxes/${sandboxId}/files?path=${encodeURIComponent(path)}`;
  return download(url, key, 'GET /v1/sandboxes/{id}/files', agent);
}

export function directDownload(access: DirectAccess, path: string, agent?: Agent): Promise<number> {
  const url = `${access.agentUrl}/v1/files/download?path=${encodeURIComponent(path)}`;
  return download(url, access.token, 'GET {agent}/v1/files/download', agent);
}
