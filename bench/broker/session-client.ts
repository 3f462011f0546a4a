/**
 * The broker's MVP session calls (docs/sessions.md) over the bench's node:http client, the
 * same one the floor is measured with. Error messages carry the status and error body
 * only: a 200's body holds a token and is never printed.
 */
import type { Agent } from 'node:http';
import { request, type Reply } from '../lib/http-client.js';
import type { BrokerProcess } from './broker-process.js';

export interface OpenedSession {
  readonly sessionId: string;
  readonly sandboxId: string;
}

const SESSIONS = '/v1/sandbox/sessions';

function headers(broker: BrokerProcess): Record<string, string> {
  return { authorization: `Bearer ${broker.apiKey}`, 'content-type': 'application/json' };
}

function refused(what: string, reply: Reply): Error {
  return new Error(`${what} answered ${reply.status}: ${reply.text.slice(0, 300)}`);
}

/** `POST /v1/sandbox/sessions {thread_id, mode}`; throws unless 200. */
export async function negotiate(
  broker: BrokerProcess,
  threadId: string,
  mode: 'get' | 'ensure',
  agent?: Agent,
): Promise<Reply> {
  const reply = await request(`${broker.url}${SESSIONS}`, {
    method: 'POST',
    headers: headers(broker),
    body: JSON.stringify({ thread_id: threadId, mode }),
    ...(agent === undefined ? {} : { agent }),
  });
  if (reply.status !== 200) throw refused(`${mode} ${threadId}`, reply);
  return reply;
}

export function sessionOf(reply: Reply): OpenedSession {
  const body = JSON.parse(reply.text) as { session_id?: string; sandbox?: { id?: string } };
  if (body.session_id === undefined || body.sandbox?.id === undefined)
    throw new Error('session response without session_id or sandbox.id');
  return { sessionId: body.session_id, sandboxId: body.sandbox.id };
}

/** `DELETE /v1/sandbox/sessions/{id}`: the last binding's release ends the sandbox and its agent. */
export async function release(broker: BrokerProcess, sessionId: string): Promise<void> {
  const reply = await request(`${broker.url}${SESSIONS}/${sessionId}`, {
    method: 'DELETE',
    headers: headers(broker),
  });
  if (reply.status !== 204) throw refused(`release ${sessionId}`, reply);
}
