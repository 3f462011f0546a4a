// `GET /admin/usage`: sandbox-seconds per state split at midnight UTC, sessions and
// tokens per tenant and day, the tenant filter, CSV, and access. The fixture's clock
// is the real one, so rows are written with chosen past timestamps (January 2026);
// state changes go through SandboxRepository.transition, whose trigger records them.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { UsageReport, type UsageRow } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { adminKeys, errorCode, makeSandbox, type AdminKeys } from './admin-kit.js';
import { usageSandbox, usageSession } from './usage-kit.js';

const at = (iso: string) => new Date(`2026-01-${iso}Z`);

describeEachBackend('admin usage', (backend) => {
  const broker = useBroker(backend, { loops: false });
  const tenantA = `tenant_usage_a_${randomUUID()}`;
  const tenantB = `tenant_usage_b_${randomUUID()}`;
  let keys: AdminKeys;

  beforeAll(async () => {
    keys = await adminKeys(broker);
    const sandboxes = broker.repositories.sandboxes;
    // Tenant A: 30 s provisioning, active across midnight, idle, then terminated.
    const a = await usageSandbox(broker, tenantA, at('10T23:00:00'));
    await sandboxes.transition(a, 'active', { at: at('10T23:00:30') });
    await sandboxes.transition(a, 'idle', { at: at('11T01:00:30') });
    await sandboxes.transition(a, 'terminated', { at: at('11T02:00:00') });
    await usageSession(broker, tenantA, a, at('10T23:00:00'), [at('10T23:00:01'), at('10T23:30:00')]);
    await usageSession(broker, tenantA, a, at('11T00:10:00'), [at('11T00:10:00')]);
    // Tenant B: active an hour on the 10th, then idle past the end of the window.
    const b = await usageSandbox(broker, tenantB, at('10T12:00:00'));
    await sandboxes.transition(b, 'active', { at: at('10T12:00:00') });
    await sandboxes.transition(b, 'idle', { at: at('10T13:00:00') });
    await usageSession(broker, tenantB, b, at('10T12:00:00'), [at('10T12:00:00')]);
  });

  const usage = (query: Record<string, string>, key = keys.admin) =>
    request(broker.url).get('/admin/usage').query(query).set(bearer(key)).buffer(true);

  const rowOf = (rows: UsageRow[], tenantId: string, day: string) =>
    rows.find((row) => row.tenant_id === tenantId && row.day === day);

  it('splits a span across midnight UTC and counts sessions and tokens per tenant and day', async () => {
    const res = await usage({ from: '2026-01-10', to: '2026-01-11' });
    expect(res.status).toBe(200);
    const rows = UsageReport.parse(res.body).items.filter((row) =>
      [tenantA, tenantB].includes(row.tenant_id),
    );
    expect(rowOf(rows, tenantA, '2026-01-10')).toEqual({
      tenant_id: tenantA,
      day: '2026-01-10',
      sandbox_seconds: { active: 3570, idle: 0, suspended: 0, provisioning: 30 },
      sessions: 1,
      tokens_minted: 2,
      commands_run: 0,
      file_bytes_in: 0,
      file_bytes_out: 0,
      execute_code_calls: 0,
    });
    expect(rowOf(rows, tenantA, '2026-01-11')).toMatchObject({
      sandbox_seconds: { active: 3630, idle: 3570, suspended: 0, provisioning: 0 },
      sessions: 1,
      tokens_minted: 1,
    });
    // Still idle: counted to the end of the window.
    expect(rowOf(rows, tenantB, '2026-01-10')?.sandbox_seconds).toEqual({
      active: 3600,
      idle: 11 * 3600,
      suspended: 0,
      provisioning: 0,
    });
    expect(rowOf(rows, tenantB, '2026-01-11')).toMatchObject({
      sandbox_seconds: { idle: 86_400, active: 0 },
      sessions: 0,
      tokens_minted: 0,
    });
    expect(rows).toHaveLength(4);
  });

  it('accounts a sandbox made through negotiation (state changes recorded by the database)', async () => {
    const tenantId = `tenant_usage_live_${randomUUID()}`;
    const key = await broker.apiKey({ scopes: ['write:sandbox'], tenantId });
    await makeSandbox(broker, key);
    const today = new Date().toISOString().slice(0, 10);
    const res = await usage({ tenant_id: tenantId, from: today, to: today });
    const [row, ...rest] = UsageReport.parse(res.body).items;
    expect(rest).toEqual([]);
    expect(row).toMatchObject({ tenant_id: tenantId, day: today, sessions: 1 });
    expect(row?.tokens_minted).toBeGreaterThanOrEqual(1);
    const seconds = row?.sandbox_seconds;
    expect((seconds?.active ?? 0) + (seconds?.provisioning ?? 0)).toBeGreaterThan(0);
  });

  it('filters by tenant and by window', async () => {
    const res = await usage({ tenant_id: tenantA, from: '2026-01-11', to: '2026-01-11' });
    expect(res.status).toBe(200);
    const { items } = UsageReport.parse(res.body);
    expect(items.map((row) => [row.tenant_id, row.day])).toEqual([[tenantA, '2026-01-11']]);
    expect(items[0]?.sandbox_seconds.active).toBe(3630);
  });

  it('exports CSV with a header and one line per tenant-day', async () => {
    const res = await usage({ from: '2026-01-10', to: '2026-01-11', format: 'csv' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const lines = res.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'tenant_id,day,sandbox_seconds_active,sandbox_seconds_idle,sandbox_seconds_suspended,' +
        'sandbox_seconds_provisioning,sessions,tokens_minted,commands_run,file_bytes_in,' +
        'file_bytes_out,execute_code_calls',
    );
    const ours = lines.slice(1).filter((line) => line.startsWith(tenantA) || line.startsWith(tenantB));
    expect(ours).toHaveLength(4);
    expect(ours).toContain(`${tenantA},2026-01-10,3570,0,0,30,1,2,0,0,0,0`);
  });

  it('refuses non-admin keys with 403 and bad dates with 400', async () => {
    const refused = await usage({ from: '2026-01-10', to: '2026-01-11' }, keys.user);
    expect([refused.status, errorCode(refused.body)]).toEqual([403, 'FORBIDDEN']);
    const bad: Record<string, string>[] = [
      {},
      { from: '2026-01-10' },
      { from: '2026-1-10', to: '2026-01-11' },
      { from: '2026-02-30', to: '2026-03-01' },
      { from: '2026-01-12', to: '2026-01-11' },
      { from: '2024-01-01', to: '2026-01-01' },
      { from: '2026-01-10', to: '2026-01-11', format: 'xml' },
      { from: '2026-01-10', to: '2026-01-11', colour: 'red' },
    ];
    for (const query of bad) {
      const res = await usage(query);
      expect([JSON.stringify(query), res.status, errorCode(res.body)]).toEqual([
        JSON.stringify(query),
        400,
        'BAD_REQUEST',
      ]);
    }
  });
});
