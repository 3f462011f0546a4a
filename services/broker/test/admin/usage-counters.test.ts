// `GET /admin/usage`'s counted columns: execute_code calls from `sandbox_invocations`
// (per tenant and UTC day of created_at), the agents' counters from `tenant_usage_days`
// (as the collector records them), 0 rather than null where a day has other usage.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { AdminSandboxDetail, UsageReport, type UsageRow } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { adminKeys, makeSandbox, type AdminKeys } from './admin-kit.js';
import { usageSandbox } from './usage-kit.js';

const at = (iso: string) => new Date(`2026-02-${iso}Z`);

describeEachBackend('admin usage: execute_code calls and agent counters', (backend) => {
  const broker = useBroker(backend, { loops: false });
  const tenant = `tenant_counted_${randomUUID()}`;
  let keys: AdminKeys;

  const invocation = (createdAt: Date, tenantId = tenant) =>
    broker.database.prisma.sandboxInvocation.create({
      data: {
        id: randomUUID(),
        createdAt,
        tenantId,
        agentId: 'agt_counted',
        language: 'python',
        executedCodeHash: 'a'.repeat(64),
        exitStatus: 'ok',
        durationMs: 12,
        purgeAfter: new Date(createdAt.getTime() + 30 * 86_400_000),
      },
    });

  beforeAll(async () => {
    keys = await adminKeys(broker);
    // Three calls on the 20th (one a millisecond before midnight UTC), one on the 21st.
    await invocation(at('20T08:00:00'));
    await invocation(at('20T12:00:00'));
    await invocation(at('20T23:59:59.999'));
    await invocation(at('21T00:00:00'));
    await invocation(at('20T09:00:00'), `tenant_other_${randomUUID()}`);
    // Agent counters on the 21st; a sandbox alive on the 22nd with nothing counted.
    const counters = broker.repositories.usageCounters;
    await counters.record(
      'sbx_counted',
      tenant,
      { bootId: 'b1', commandsRun: 4, fileBytesIn: 10, fileBytesOut: 0 },
      at('21T10:00:00'),
    );
    await counters.record(
      'sbx_counted',
      tenant,
      { bootId: 'b1', commandsRun: 6, fileBytesIn: 10, fileBytesOut: 7 },
      at('21T11:00:00'),
    );
    await usageSandbox(broker, tenant, at('22T06:00:00'));
  });

  const usage = (query: Record<string, string>) =>
    request(broker.url).get('/admin/usage').query(query).set(bearer(keys.admin)).buffer(true);
  const row = (rows: UsageRow[], day: string) => rows.find((r) => r.tenant_id === tenant && r.day === day);

  it('counts execute_code calls per UTC day and sums the agents counters', async () => {
    const res = await usage({ from: '2026-02-20', to: '2026-02-22', tenant_id: tenant });
    expect(res.status).toBe(200);
    const rows = UsageReport.parse(res.body).items;
    expect(rows.map((r) => r.day)).toEqual(['2026-02-20', '2026-02-21', '2026-02-22']);
    expect(row(rows, '2026-02-20')).toMatchObject({
      execute_code_calls: 3,
      commands_run: 0,
      file_bytes_in: 0,
      file_bytes_out: 0,
      sessions: 0,
    });
    expect(row(rows, '2026-02-21')).toMatchObject({
      execute_code_calls: 1,
      commands_run: 6,
      file_bytes_in: 10,
      file_bytes_out: 7,
    });
    // Provisioning time only: a row, with zeros where nothing was counted.
    expect(row(rows, '2026-02-22')).toMatchObject({
      commands_run: 0,
      file_bytes_in: 0,
      file_bytes_out: 0,
      execute_code_calls: 0,
    });
  });

  it('writes the same numbers to CSV', async () => {
    const res = await usage({ from: '2026-02-21', to: '2026-02-21', tenant_id: tenant, format: 'csv' });
    expect(res.status).toBe(200);
    expect(res.text.trimEnd().split('\r\n')[1]).toBe(`${tenant},2026-02-21,0,0,0,0,0,0,6,10,7,1`);
  });

  it('shows no agent in the detail when the provider has no report, and the fake one when set', async () => {
    const made = await makeSandbox(broker, keys.user);
    const get = async () =>
      AdminSandboxDetail.parse(
        (await request(broker.url).get(`/admin/sandboxes/${made.sandboxId}`).set(bearer(keys.admin))).body,
      );
    expect((await get()).agent).toBeNull();
    broker.provider.reports.set(made.sandboxId, {
      bootId: 'boot-fake',
      usage: { commands_run: 1, file_bytes_in: 2, file_bytes_out: 3 },
      processes: [
        { id: 'proc_1', command: 'sleep 1', started_at: '2026-02-22T00:00:00.000Z', running: true },
      ],
      shells: [],
    });
    const detail = await get();
    expect(detail.agent).toEqual({
      reported_at: expect.any(String),
      processes: [
        { id: 'proc_1', command: 'sleep 1', started_at: '2026-02-22T00:00:00.000Z', running: true },
      ],
      shells: [],
      usage: { commands_run: 1, file_bytes_in: 2, file_bytes_out: 3 },
    });
  });
});
