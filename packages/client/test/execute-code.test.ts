// execute_code through the SDK against a real broker with the local provider (real agents):
// results for code that succeeds and fails, on the thread route and the session route, a cap
// that fires after an admin set it, and refusals as the SDK's typed errors.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BrokerClient, BrokerSession, ForbiddenError, NotFoundError, SecurityError } from '../src/index.js';
import { startRealBroker, type RealBroker } from './support.js';

const SLOW = 120_000;
/** What an agent that runs code holds: attach, create, and exec:sandbox for execute_code. */
const AGENT_SCOPES = ['read:sandbox', 'write:sandbox', 'exec:sandbox'];
let real: RealBroker;
let agent: BrokerClient;

function clientOf(apiKey: string): BrokerClient {
  return new BrokerClient({ baseUrl: real.harness.url, apiKey });
}

/** Sets execute_code caps of a tenant through the admin API, with the harness's admin key. */
async function setCaps(tenantId: string, caps: Record<string, number>): Promise<void> {
  const response = await fetch(`${real.harness.url}/admin/tenants/${tenantId}/policy`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${real.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(caps),
  });
  if (response.status !== 200) throw new Error(`policy: ${response.status} ${await response.text()}`);
}

beforeAll(async () => {
  real = await startRealBroker();
  agent = clientOf(await real.harness.apiKey({ scopes: AGENT_SCOPES, principalType: 'agent' }));
}, SLOW);

afterAll(async () => {
  await real?.close();
}, SLOW);

describe('BrokerClient.executeCode and BrokerSession.executeCode', () => {
  it(
    "runs python in the thread's sandbox, and the session route runs in the same one",
    async () => {
      const thread = `thr_${randomUUID()}`;
      const py = await agent.executeCode({ threadId: thread, code: 'print(6 * 7)' });
      expect(py).toMatchObject({
        ok: true,
        exit_status: 'ok',
        stdout: '42\n',
        stderr: '',
        exit_code: 0,
        stdout_truncated: false,
      });
      expect(py.sandbox_id).toEqual(expect.any(String));

      // An agent principal acts as itself: no actor given.
      await using session = await BrokerSession.ensure(agent, { scope: { type: 'thread', id: thread } });
      const sh = await session.executeCode({ code: 'echo "$((2 + 3))"; echo warn >&2', language: 'bash' });
      expect(sh).toMatchObject({ ok: true, stdout: '5\n', stderr: 'warn\n', sandbox_id: py.sandbox_id });
      const js = await agent.executeCode({
        scope: { type: 'thread', id: thread },
        code: 'console.log([1, 2, 3].length)',
        language: 'javascript',
      });
      expect(js).toMatchObject({ ok: true, stdout: '3\n', sandbox_id: py.sandbox_id });
    },
    SLOW,
  );

  it(
    'code that fails or runs too long is a result with ok false, not an exception',
    async () => {
      const thread = `thr_${randomUUID()}`;
      const failed = await agent.executeCode({
        threadId: thread,
        code: 'import sys\nprint("before")\nsys.stderr.write("boom\\n")\nsys.exit(2)',
      });
      expect(failed).toMatchObject({
        ok: false,
        exit_status: 'error',
        exit_code: 2,
        stdout: 'before\n',
        stderr: 'boom\n',
      });
      const slow = await agent.executeCode({
        threadId: thread,
        code: 'sleep 60',
        language: 'bash',
        timeoutMs: 500,
      });
      expect(slow).toMatchObject({ ok: false, exit_status: 'timeout' });
    },
    SLOW,
  );

  it(
    "an agent over the tenant's hourly cap gets SandboxCapExceeded with resets_at",
    async () => {
      const tenantId = `tenant_${randomUUID()}`;
      const key = await real.harness.apiKey({ tenantId, scopes: AGENT_SCOPES, principalType: 'agent' });
      await setCaps(tenantId, { execute_code_agent_hourly_cap: 1 });
      const capped = clientOf(key);
      const thread = `thr_${randomUUID()}`;
      expect(await capped.executeCode({ threadId: thread, code: 'print(1)' })).toMatchObject({ ok: true });
      const refused = await capped.executeCode({ threadId: thread, code: 'print(2)' });
      expect(refused).toMatchObject({
        ok: false,
        exit_status: 'cap_exceeded',
        error: 'SandboxCapExceeded',
        dimension: 'agent_hourly',
        retryable: true,
        stdout: '',
      });
      const resetsAt = Date.parse(refused.resets_at ?? '');
      expect(resetsAt).toBeGreaterThan(Date.now());
      expect(resetsAt).toBeLessThanOrEqual(Date.now() + 3_600_000);
    },
    SLOW,
  );

  it('refusals are typed errors: no exec:sandbox is a ForbiddenError, an unknown session a NotFoundError', async () => {
    const reader = clientOf(await real.harness.apiKey({ scopes: ['read:sandbox'], principalType: 'agent' }));
    const forbidden = reader.executeCode({ threadId: `thr_${randomUUID()}`, code: 'print(1)' });
    await expect(forbidden).rejects.toBeInstanceOf(ForbiddenError);
    await expect(forbidden).rejects.toBeInstanceOf(SecurityError);
    await expect(forbidden).rejects.toMatchObject({ code: 'FORBIDDEN', httpStatus: 403 });
    await expect(agent.executeCodeInSession(randomUUID(), { code: 'print(1)' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});
