// With real agents (the local provider): the admin detail shows what the sandbox's agent
// reports (a background process started through the agent, a shell opened over its
// WebSocket), and `GET /admin/usage` the programs and file bytes the usage collector
// recorded after real exec, upload and download.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WebSocket } from 'ws';
import { AdminSandboxDetail, FullSessionResponse, UsageReport } from '@sbx/protocol';
import { createLogger } from '@sbx/service-kit';
import { createUsageCollector } from '../../src/domain/admin/usage-collector.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;

/** A session's sandbox as a client reaches it. */
interface Door {
  readonly sandboxId: string;
  readonly http: string;
  readonly ws: string;
  readonly token: string;
}

/** Opens a shell over the agent's WebSocket; resolves with its id once it is ready. */
function openShell(sandbox: Door): Promise<{ id: string; socket: WebSocket }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${sandbox.ws}/v1/shell/ws`);
    socket.on('error', reject);
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'auth', token: sandbox.token }));
      socket.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
    });
    socket.on('message', (data: Buffer, binary: boolean) => {
      if (binary) return;
      const frame = JSON.parse(data.toString('utf8')) as { type: string; shell_session_id?: string };
      if (frame.type === 'ready' && frame.shell_session_id !== undefined)
        resolve({ id: frame.shell_session_id, socket });
      if (frame.type === 'error') reject(new Error(data.toString('utf8')));
    });
  });
}

describe(`admin detail and usage from real agents [${backend.name}]`, () => {
  const broker = useLocalBroker(backend, {
    isolation: 'none',
    settings: { provisioningWaitMs: 20_000 },
    loops: false,
  });
  let admin: string;
  let user: string;

  beforeAll(async () => {
    const scopes = ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'];
    admin = await broker.apiKey({ scopes: ['admin:sandbox'], principalId: 'ops_admin' });
    user = await broker.apiKey({ scopes, principalType: 'user' });
  }, 60_000);

  /** The user's own thread sandbox, as the human it is (shell) or as its agent (process). */
  const open = async (threadId: string, actor: 'human' | 'agent'): Promise<Door> => {
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(user))
      .send({
        scope: { type: 'thread', id: threadId },
        mode: 'ensure',
        ...(actor === 'agent' ? { actor: { type: 'agent', id: 'agt_report' } } : {}),
      });
    expect(res.status).toBe(200);
    const session = FullSessionResponse.parse(res.body);
    return {
      sandboxId: session.binding.sandbox_id,
      http: session.dataplane.http_base_url,
      ws: session.dataplane.ws_base_url,
      token: session.credentials.access_token,
    };
  };
  const call = (sandbox: Door, path: string, init: RequestInit = {}) =>
    fetch(`${sandbox.http}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${sandbox.token}`, 'content-type': 'application/json' },
    });
  const detailOf = async (id: string) => {
    const res = await request(broker.url).get(`/admin/sandboxes/${id}`).set(bearer(admin));
    expect(res.status).toBe(200);
    return AdminSandboxDetail.parse(res.body);
  };
  const collector = () =>
    createUsageCollector({
      repository: broker.repositories.usageCounters,
      provider: broker.provider,
      clock: Date.now,
      logger: createLogger({ service: 'usage-test', level: 'silent' }),
    });

  it('shows processes and shells the agent reports, and usage after a collection', async () => {
    const threadId = `thr_${randomUUID()}`;
    const mine = await open(threadId, 'agent');
    const theirs = await open(threadId, 'human');
    expect(theirs.sandboxId).toBe(mine.sandboxId);

    const ran = await call(mine, '/v1/exec', { method: 'POST', body: JSON.stringify({ cmd: 'echo hi' }) });
    expect(ran.status).toBe(200);
    const marker = `${100 + Math.floor(Math.random() * 800)}.${Date.now() % 100_000}`;
    const bg = await call(mine, '/v1/processes', {
      method: 'POST',
      body: JSON.stringify({ argv: ['sleep', marker] }),
    });
    expect(bg.status).toBe(201);
    const { process_id: processId } = (await bg.json()) as { process_id: string };
    const content = 'y'.repeat(4096);
    expect((await call(mine, '/files/data.bin', { method: 'PUT', body: content })).status).toBe(201);
    expect(await (await call(mine, '/files/data.bin')).text()).toBe(content);
    const shell = await openShell(theirs);

    try {
      const detail = await detailOf(mine.sandboxId);
      expect(detail.agent).not.toBeNull();
      expect(detail.agent?.processes).toContainEqual({
        id: processId,
        command: `sleep ${marker}`,
        started_at: expect.any(String),
        running: true,
      });
      expect(detail.agent?.shells).toEqual([{ id: shell.id, opened_at: expect.any(String) }]);
      expect(detail.agent?.usage).toEqual({ commands_run: 2, file_bytes_in: 4096, file_bytes_out: 4096 });

      const usage = collector();
      expect(await usage.collectOnce()).toEqual({ recorded: 1, missed: 0 });
      // A second round with nothing new adds nothing; then one more program is one more.
      await usage.collectOnce();
      expect((await call(mine, '/v1/exec', { method: 'POST', body: '{"cmd":"true"}' })).status).toBe(200);
      await usage.collectOnce();

      const today = new Date().toISOString().slice(0, 10);
      const res = await request(broker.url)
        .get('/admin/usage')
        .query({ from: today, to: today, tenant_id: detail.tenant_id })
        .set(bearer(admin));
      expect(res.status).toBe(200);
      const [row] = UsageReport.parse(res.body).items;
      expect(row).toMatchObject({
        tenant_id: detail.tenant_id,
        day: today,
        commands_run: 3,
        file_bytes_in: 4096,
        file_bytes_out: 4096,
        execute_code_calls: 0,
      });
    } finally {
      shell.socket.close();
    }

    // Terminated: no agent to ask.
    const ended = await request(broker.url)
      .post(`/admin/sandboxes/${mine.sandboxId}/terminate`)
      .set(bearer(admin))
      .send({});
    expect(ended.status).toBe(200);
    expect((await detailOf(mine.sandboxId)).agent).toBeNull();
    expect(await collector().collectOnce()).toEqual({ recorded: 0, missed: 0 });
  });
});
