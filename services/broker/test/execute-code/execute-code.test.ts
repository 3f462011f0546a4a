// execute_code end to end (docs/execute-code.md): real broker, real Postgres, real agents
// of the local provider. Each exit status produced for real, the thread's sandbox reused
// across calls, one sandbox_invocations row per call, output redacted, no credentials in
// the code's environment, a disabled tenant failing closed, and caps exact under concurrency.
import { createHash, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { ExecuteCodeResult } from '@sbx/protocol';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { until } from '../support/until.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;

describe(`execute_code through the broker [${backend.name}]`, () => {
  const broker = useLocalBroker(backend, {
    isolation: 'none',
    settings: { provisioningWaitMs: 20_000 },
  });
  let agent: string;
  let admin: string;

  beforeAll(async () => {
    agent = await broker.apiKey({ scopes: ['exec:sandbox', 'write:sandbox'], principalType: 'agent' });
    admin = await broker.apiKey({ scopes: ALL_CALLER_SCOPES, principalType: 'user' });
  }, 60_000);

  const run = async (key: string, body: Record<string, unknown>): Promise<ExecuteCodeResult> => {
    const res = await request(broker.url).post('/v1/execute_code').set(bearer(key)).send(body);
    if (res.status !== 200)
      throw new Error(`execute_code answered ${res.status}: ${JSON.stringify(res.body)}`);
    return ExecuteCodeResult.parse(res.body);
  };
  /** A tenant of its own with an agent key, its policy set through the admin API. */
  const newTenant = async (policy: Record<string, unknown>) => {
    const tenantId = `tenant_${randomUUID()}`;
    const key = await broker.apiKey({
      tenantId,
      scopes: ['exec:sandbox', 'write:sandbox'],
      principalType: 'agent',
    });
    const put = await request(broker.url)
      .put(`/admin/tenants/${tenantId}/policy`)
      .set(bearer(admin))
      .send(policy);
    if (put.status !== 200) throw new Error(`policy answered ${put.status}`);
    return { tenantId, key, policy: put.body as Record<string, unknown> };
  };
  const invocationRows = (where: { id: { in: string[] } } | { tenantId: string }) =>
    broker.database.prisma.sandboxInvocation.findMany({ where });
  /** A call's row is written as its answer leaves: wait for the rows the calls made. */
  const settledRows = async (where: Parameters<typeof invocationRows>[0], expected: number) => {
    await until(async () => (await invocationRows(where)).length >= expected, `${expected} invocation rows`);
    return invocationRows(where);
  };
  const rowsOf = (invocationIds: readonly string[]) =>
    settledRows({ id: { in: [...invocationIds] } }, invocationIds.length);

  it('runs python, javascript and bash in the thread sandbox, reusing it, one row per call', async () => {
    const thread = `thr_${randomUUID()}`;
    const py = await run(agent, { thread_id: thread, language: 'python', code: 'print(6 * 7)' });
    const js = await run(agent, {
      thread_id: thread,
      language: 'javascript',
      code: 'console.log([1,2,3].length)',
    });
    const sh = await run(agent, {
      thread_id: thread,
      language: 'bash',
      code: 'echo "$((2 + 3))"; echo warn >&2',
    });
    expect(py.error_message ?? '').toBe('');
    expect(py).toMatchObject({ ok: true, exit_status: 'ok', stdout: '42\n', exit_code: 0 });
    expect(js).toMatchObject({ ok: true, stdout: '3\n' });
    expect(sh).toMatchObject({ ok: true, stdout: '5\n', stderr: 'warn\n' });
    expect(new Set([py.sandbox_id, js.sandbox_id, sh.sandbox_id]).size).toBe(1);
    const rows = await rowsOf([py.invocation_id, js.invocation_id, sh.invocation_id]);
    expect(rows).toHaveLength(3);
    const pyRow = rows.find((row) => row.id === py.invocation_id)!;
    expect(pyRow).toMatchObject({
      exitStatus: 'ok',
      language: 'python',
      sandboxId: py.sandbox_id,
      executedCodeHash: createHash('sha256').update('print(6 * 7)').digest('hex'),
      stdoutBytes: 3n,
      scopeType: 'thread',
      scopeId: thread,
    });
    expect(pyRow.purgeAfter.getTime() - pyRow.createdAt.getTime()).toBe(30 * 86_400_000);
  }, 120_000);

  it('keeps using the thread sandbox between calls, and finds a new one after it ended', async () => {
    const thread = `thr_${randomUUID()}`;
    const first = await run(agent, {
      thread_id: thread,
      language: 'bash',
      code: 'echo one > marker; cat marker',
    });
    const second = await run(agent, { thread_id: thread, language: 'bash', code: 'cat marker' });
    expect([first.stdout, second.stdout, second.sandbox_id]).toEqual(['one\n', 'one\n', first.sandbox_id]);
    const released = await request(broker.url).delete(`/threads/${thread}/sandbox`).set(bearer(agent));
    expect(released.status).toBe(204);
    const third = await run(agent, {
      thread_id: thread,
      language: 'bash',
      code: 'cat marker 2>/dev/null || echo fresh',
    });
    expect(third).toMatchObject({ ok: true, stdout: 'fresh\n' });
    expect(third.sandbox_id).not.toBe(first.sandbox_id);
  }, 120_000);

  it('reports error, timeout and oom, and the sandbox keeps serving', async () => {
    const thread = `thr_${randomUUID()}`;
    const failed = await run(agent, { thread_id: thread, code: 'import sys; sys.exit(3)' });
    expect(failed).toMatchObject({ ok: false, exit_status: 'error', exit_code: 3 });
    const slow = await run(agent, { thread_id: thread, language: 'bash', code: 'sleep 60', timeout_ms: 500 });
    expect(slow).toMatchObject({ ok: false, exit_status: 'timeout' });
    const hog = await run(agent, {
      thread_id: thread,
      code: 'chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))',
    });
    expect(hog).toMatchObject({ ok: false, exit_status: 'oom' });
    const after = await run(agent, { thread_id: thread, code: 'print("still here")' });
    expect(after).toMatchObject({ ok: true, stdout: 'still here\n' });
    const rows = await rowsOf([failed, slow, hog].map((r) => r.invocation_id));
    expect(rows.map((r) => [r.exitStatus, r.failureReason === null]).toSorted()).toEqual([
      ['error', false],
      ['oom', false],
      ['timeout', false],
    ]);
  }, 180_000);

  it('redacts a secret split across writes, and the code sees no credential of the caller', async () => {
    const thread = `thr_${randomUUID()}`;
    const secret = `ghp_${'A1b2C3d4E5'.repeat(3)}abcdef`;
    const code = [
      'import os, sys',
      `sys.stdout.write(${JSON.stringify(secret.slice(0, 10))}); sys.stdout.flush()`,
      `sys.stdout.write(${JSON.stringify(secret.slice(10))} + "\\n"); sys.stdout.flush()`,
      'print("\\n".join(f"{k}={v}" for k, v in os.environ.items()))',
    ].join('\n');
    const result = await run(agent, { thread_id: thread, code });
    expect(result.ok).toBe(true);
    expect(result.stdout).not.toContain(secret);
    expect(result.stdout).toContain('[REDACTED');
    expect(result.stdout).not.toContain(agent);
    expect(result.stdout).not.toMatch(/sbk_|eyJ[\w-]+\.eyJ/);
    expect(result.stdout).toMatch(/^PATH=/m);
  }, 120_000);

  it('a disabled tenant fails closed: SandboxDisabled, no sandbox, one row', async () => {
    const { tenantId, key } = await newTenant({ sandbox_enabled: false });
    const result = await run(key, { thread_id: `thr_${randomUUID()}`, code: 'print(1)' });
    expect(result).toMatchObject({
      ok: false,
      exit_status: 'provisioning',
      error: 'SandboxDisabled',
      sandbox_id: null,
      retryable: false,
    });
    expect(await broker.database.prisma.sandbox.count({ where: { tenantId } })).toBe(0);
    expect(await rowsOf([result.invocation_id])).toHaveLength(1);
  }, 60_000);

  it('50 concurrent calls against an hourly cap of 10 run exactly 10; a cap of 0 is a kill switch', async () => {
    const { tenantId, key, policy } = await newTenant({ execute_code_agent_hourly_cap: 10 });
    expect(policy).toMatchObject({ execute_code_agent_hourly_cap: 10, execute_code_daily_cap: 1000 });
    const thread = `thr_${randomUUID()}`;
    await run(key, { thread_id: thread, language: 'bash', code: 'true' });
    const results = await Promise.all(
      Array.from({ length: 50 }, () => run(key, { thread_id: thread, language: 'bash', code: 'echo ran' })),
    );
    const ran = results.filter((r) => r.exit_status === 'ok');
    const capped = results.filter((r) => r.exit_status === 'cap_exceeded');
    expect(ran).toHaveLength(9);
    expect(capped).toHaveLength(41);
    const nextHour = new Date(Math.floor(Date.now() / 3_600_000 + 1) * 3_600_000);
    expect(capped[0]).toMatchObject({
      error: 'SandboxCapExceeded',
      dimension: 'agent_hourly',
      retryable: true,
    });
    expect(Math.abs(Date.parse(capped[0]!.resets_at!) - nextHour.getTime())).toBeLessThan(3_600_000);
    const rows = await settledRows({ tenantId }, 51);
    const byStatus = new Map<string, number>();
    for (const row of rows) byStatus.set(row.exitStatus, (byStatus.get(row.exitStatus) ?? 0) + 1);
    expect(Object.fromEntries(byStatus)).toEqual({ ok: 10, cap_exceeded: 41 });

    await request(broker.url)
      .put(`/admin/tenants/${tenantId}/policy`)
      .set(bearer(admin))
      .send({ execute_code_daily_cap: 0, execute_code_agent_hourly_cap: 100 })
      .expect(200);
    const killed = await run(key, { thread_id: thread, language: 'bash', code: 'echo ran' });
    expect(killed).toMatchObject({ exit_status: 'cap_exceeded', dimension: 'tenant_daily' });
  }, 180_000);

  it('lets operators page through and export the invocations of a tenant, and no one else', async () => {
    const { tenantId, key } = await newTenant({});
    const thread = `thr_${randomUUID()}`;
    const made: string[] = [];
    for (const code of ['echo a', 'echo b', 'exit 4'])
      made.push((await run(key, { thread_id: thread, language: 'bash', code })).invocation_id);
    await rowsOf(made);
    const first = await request(broker.url)
      .get(`/admin/invocations?tenant_id=${tenantId}&limit=2`)
      .set(bearer(admin));
    expect(first.status).toBe(200);
    expect(first.body.items.map((i: { id: string }) => i.id)).toEqual([made[2], made[1]]);
    expect(first.body.items[0]).toMatchObject({
      exit_status: 'error',
      language: 'bash',
      tenant_id: tenantId,
    });
    const second = await request(broker.url)
      .get(`/admin/invocations?tenant_id=${tenantId}&limit=2&cursor=${first.body.next_cursor as string}`)
      .set(bearer(admin));
    expect(second.body).toMatchObject({ items: [{ id: made[0] }], next_cursor: null });
    const failed = await request(broker.url)
      .get(`/admin/invocations?tenant_id=${tenantId}&exit_status=error`)
      .set(bearer(admin));
    expect(failed.body.items).toHaveLength(1);
    const csv = await request(broker.url)
      .get(`/admin/invocations/export?tenant_id=${tenantId}&format=csv`)
      .set(bearer(admin));
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toMatch(/^id,created_at,tenant_id,agent_id/);
    expect(lines).toHaveLength(4);
    const jsonl = await request(broker.url)
      .get(`/admin/invocations/export?tenant_id=${tenantId}&format=jsonl`)
      .set(bearer(admin))
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => done(null, text));
      });
    expect(
      (jsonl.body as string)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id as string),
    ).toEqual(made.toReversed());
    const refused = await request(broker.url).get('/admin/invocations').set(bearer(key));
    expect(refused.status).toBe(403);
    const badCursor = await request(broker.url).get('/admin/invocations?cursor=bm9wZQ').set(bearer(admin));
    expect(badCursor.status).toBe(400);
  }, 120_000);

  it('refuses a caller without exec:sandbox and bad bodies with the error envelope', async () => {
    const reader = await broker.apiKey({ scopes: ['read:sandbox'], principalType: 'agent' });
    const forbidden = await request(broker.url)
      .post('/v1/execute_code')
      .set(bearer(reader))
      .send({ thread_id: 'thr_x', code: 'print(1)' });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe('FORBIDDEN');
    for (const body of [
      { code: 'print(1)' },
      { thread_id: 't', scope: { type: 'thread', id: 't' }, code: '1' },
      { thread_id: 't', code: 'x', language: 'cobol' },
      { thread_id: 't', code: 'x', timeout_ms: 0 },
      { thread_id: 't', code: 'x', timeout_ms: 300_001 },
      { thread_id: 't', code: 5 },
      { thread_id: 't', code: 'x', extra: true },
    ]) {
      const res = await request(broker.url).post('/v1/execute_code').set(bearer(agent)).send(body);
      expect([res.status, res.body.error?.code]).toEqual([400, 'BAD_REQUEST']);
    }
    const unknownSession = await request(broker.url)
      .post(`/v1/sandbox/sessions/${randomUUID()}/execute_code`)
      .set(bearer(agent))
      .send({ code: 'print(1)' });
    expect(unknownSession.status).toBe(404);
  }, 60_000);
});
