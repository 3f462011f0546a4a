// execute_code's other doors and guards (docs/execute-code.md): the session route, the
// redactor's readiness check aborting before any user code, and the tenant's network
// environment deciding what the code can reach — under bubblewrap, as in production.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { ExecuteCodeResult } from '@sbx/protocol';
import { httpCodeRunner, type CodeRunner } from '../../src/domain/execute-code/code-runner.js';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { until } from '../support/until.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;

/**
 * Stand-in for an agent image built without the output redactor: the real agent runs the
 * code, and this runner hands back what a redactor-less agent would (the secret in clear,
 * no redactions). Every run it was asked for is recorded, so the test sees what ran.
 */
function redactorlessRunner(runs: string[]): CodeRunner {
  return {
    async run(url, token, run) {
      runs.push(run.code);
      const outcome = await httpCodeRunner.run(url, token, run);
      // The readiness snippet prints its secret from two quoted halves: what an agent
      // without a redactor would hand back is those halves joined, in clear.
      const halves = /'(ghp_)' '([A-Za-z0-9]+)'/.exec(run.code);
      const clear = halves === null ? outcome.stdout : `readiness ${halves[1]}${halves[2]}\n`;
      return { ...outcome, stdout: clear, redactions: 0 };
    },
  };
}

describe(`execute_code doors and guards [${backend.name}]`, () => {
  const runs: string[] = [];
  const broker = useLocalBroker(backend, {
    isolation: 'bubblewrap',
    settings: { provisioningWaitMs: 30_000 },
  });
  let agent: string;
  let admin: string;

  beforeAll(async () => {
    agent = await broker.apiKey({ scopes: ['exec:sandbox', 'write:sandbox'], principalType: 'agent' });
    admin = await broker.apiKey({ scopes: ALL_CALLER_SCOPES, principalType: 'user' });
  }, 60_000);

  const run = async (url: string, key: string, path: string, body: object): Promise<ExecuteCodeResult> => {
    const res = await request(url).post(path).set(bearer(key)).send(body);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
    return ExecuteCodeResult.parse(res.body);
  };

  it('runs in a negotiated session by its id, in the same sandbox as its files', async () => {
    const negotiated = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(agent))
      .send({
        scope: { type: 'thread', id: `thr_${randomUUID()}` },
        mode: 'ensure',
        requested_capabilities: ['process'],
      });
    expect(negotiated.status).toBe(200);
    const sessionId = negotiated.body.session_id as string;
    const result = await run(broker.url, agent, `/v1/sandbox/sessions/${sessionId}/execute_code`, {
      language: 'bash',
      code: 'echo "$HOME $(pwd)"',
    });
    expect(result).toMatchObject({ ok: true, stdout: '/workspace /workspace\n' });
    expect(result.sandbox_id).toBe(negotiated.body.sandbox.id);
    const someoneElse = await broker.apiKey({
      scopes: ['exec:sandbox', 'write:sandbox'],
      principalType: 'agent',
    });
    const theirs = await request(broker.url)
      .post(`/v1/sandbox/sessions/${sessionId}/execute_code`)
      .set(bearer(someoneElse))
      .send({ code: 'print(1)' });
    expect(theirs.status).toBe(404);
  }, 120_000);

  it('an internal-only tenant’s code reaches no network; a sandbox made public is not reused after the switch', async () => {
    const tenantId = `tenant_${randomUUID()}`;
    const key = await broker.apiKey({
      tenantId,
      scopes: ['exec:sandbox', 'write:sandbox'],
      principalType: 'agent',
    });
    const port = new URL(broker.url).port;
    const connect = `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${port}), timeout=5)\n    print("connected")\nexcept OSError as e:\n    print("refused", type(e).__name__)`;
    const publicThread = `thr_${randomUUID()}`;
    const before = await run(broker.url, key, '/v1/execute_code', {
      thread_id: publicThread,
      code: 'print(1)',
    });
    expect(before.ok).toBe(true);
    await request(broker.url)
      .put(`/admin/tenants/${tenantId}/policy`)
      .set(bearer(admin))
      .send({ environment: 'internal-only' })
      .expect(200);
    const stale = await run(broker.url, key, '/v1/execute_code', {
      thread_id: publicThread,
      code: 'print(1)',
    });
    expect(stale).toMatchObject({
      ok: false,
      exit_status: 'provisioning',
      error: 'SandboxProvisioning',
      retryable: false,
    });
    const fresh = await run(broker.url, key, '/v1/execute_code', {
      thread_id: `thr_${randomUUID()}`,
      code: connect,
    });
    expect(fresh).toMatchObject({ ok: true });
    expect(fresh.stdout).toMatch(/^refused /);
  }, 180_000);

  describe('with an agent whose output redactor is not active', () => {
    let other: Awaited<ReturnType<typeof broker.instance>>;
    beforeAll(async () => {
      other = await broker.instance({ executeCode: { runner: redactorlessRunner(runs) } });
    }, 60_000);

    it('aborts before any user code runs', async () => {
      const key = await other.apiKey({ scopes: ['exec:sandbox', 'write:sandbox'], principalType: 'agent' });
      const result = await run(other.url, key, '/v1/execute_code', {
        thread_id: `thr_${randomUUID()}`,
        code: 'print("user code")',
      });
      expect(result).toMatchObject({
        ok: false,
        exit_status: 'provisioning',
        error: 'SandboxProvisioning',
        retryable: false,
      });
      expect(result.error_message).toMatch(/redactor/);
      expect(runs).toHaveLength(1);
      expect(runs[0]).not.toContain('user code');
      const row = () =>
        broker.database.prisma.sandboxInvocation.findUnique({ where: { id: result.invocation_id } });
      await until(async () => (await row()) !== null, 'the invocation row');
      expect((await row())?.exitStatus).toBe('provisioning');
    }, 120_000);
  });
});
