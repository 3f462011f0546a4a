// Where a sandbox's workspace is, as the SDK learns it from a broker's answer: the full
// protocol's `dataplane.workspace_path`, the MVP mirror, the thread route; `/workspace`
// for a server that leaves it out. A scripted broker on port 0 gives the answers.
import { afterEach, describe, expect, it } from '@jest/globals';
import { toSessionResponse, type FullSessionResponse, type ThreadSandboxResponse } from '@sbx/protocol';
import { BrokerClient, BrokerSession, DEFAULT_WORKSPACE_PATH, workspacePathOf } from '../src/index.js';
import { startScriptedHttp, type ScriptedHttp } from './scripted-http.js';

const RETRY = { maxAttempts: 1, baseDelayMs: 5, maxDelayMs: 10 };
const servers: ScriptedHttp[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

function full(workspacePath: string | undefined): FullSessionResponse {
  const expiresAt = new Date(Date.now() + 600_000).toISOString();
  return {
    binding: {
      id: 'bind_1',
      scope: { type: 'thread', id: 'thr_1' },
      sandbox_id: 'sb_1',
      provider: 'local',
      state: 'active',
      lease_expires_at: expiresAt,
    },
    dataplane: {
      http_base_url: 'http://127.0.0.1:9/',
      ws_base_url: 'ws://127.0.0.1:9/',
      ...(workspacePath === undefined ? {} : { workspace_path: workspacePath }),
    },
    credentials: {
      token_type: 'Bearer',
      access_token: 'tok_1',
      expires_at: expiresAt,
      granted_capabilities: ['fs:rw', 'process'],
    },
    policy: { idle_timeout_seconds: 900, hard_ttl_seconds: 28800 },
  };
}

async function sessionAnswering(body: unknown): Promise<BrokerSession> {
  const server = await startScriptedHttp({
    status: 200,
    contentType: 'application/json',
    body: JSON.stringify(body),
  });
  servers.push(server);
  const broker = new BrokerClient({ baseUrl: server.url, apiKey: 'k', retry: RETRY });
  const session = await BrokerSession.ensure(broker, { thread_id: 'thr_1' });
  session.credentials.close();
  return session;
}

describe('the workspace path of a negotiated session', () => {
  it('is what the broker says (full field and MVP mirror)', async () => {
    const session = await sessionAnswering(toSessionResponse(full('/srv/ws/sb_1')));
    expect(session.workspacePath).toBe('/srv/ws/sb_1');
    expect(workspacePathOf(session.response)).toBe('/srv/ws/sb_1');
  });

  it('is /workspace when a server leaves it out', async () => {
    const answer: unknown = JSON.parse(JSON.stringify(toSessionResponse(full(undefined))));
    expect(answer).not.toHaveProperty('dataplane.workspace_path');
    expect(answer).not.toHaveProperty('sandbox.workspace_path');
    const session = await sessionAnswering(answer);
    expect(session.workspacePath).toBe('/workspace');
    expect(DEFAULT_WORKSPACE_PATH).toBe('/workspace');
  });

  it('reads the MVP mirror when the full field is missing, and the thread route', () => {
    const answer = toSessionResponse(full(undefined));
    const mirrored = { ...answer, sandbox: { ...answer.sandbox, workspace_path: '/home/ws' } };
    expect(workspacePathOf(mirrored)).toBe('/home/ws');
    const thread = { workspace_path: '/workspace' } satisfies Pick<ThreadSandboxResponse, 'workspace_path'>;
    expect(workspacePathOf(thread)).toBe('/workspace');
    expect(workspacePathOf({})).toBe('/workspace');
  });
});
