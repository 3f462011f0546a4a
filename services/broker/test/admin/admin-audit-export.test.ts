// The audit export: the audit query's selection streamed as JSON lines or CSV.
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { AdminAuditEvent } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { adminKeys, errorCode, type AdminKeys } from './admin-kit.js';

describeEachBackend('admin audit export', (backend) => {
  const broker = useBroker(backend, { loops: false });
  let keys: AdminKeys;

  beforeAll(async () => {
    keys = await adminKeys(broker);
    // 1,200 rows: more than two export pages, one with a value a spreadsheet would run.
    for (let i = 0; i < 1_200; i++) {
      await broker.repositories.audit.append({
        action: 'test.export',
        outcome: 'ok',
        tenantId: broker.tenantId,
        callerId: i === 0 ? '=HYPERLINK("x")' : `caller_${i}`,
        detail: { n: i, note: 'a, "quoted" value' },
      });
    }
  });

  const exportOf = (query: Record<string, string | number>, key = keys.admin) =>
    request(broker.url).get('/admin/audit/export').query(query).set(bearer(key)).buffer(true);

  it('streams JSON lines of the filtered selection, newest first, across pages', async () => {
    const res = await exportOf({ format: 'jsonl', action: 'test.export', tenant_id: broker.tenantId });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const events = res.text
      .trimEnd()
      .split('\n')
      .map((line) => AdminAuditEvent.parse(JSON.parse(line)));
    expect(events).toHaveLength(1_200);
    expect(events.every((event) => event.action === 'test.export')).toBe(true);
    expect(events[0]?.detail).toEqual({ n: 1_199, note: 'a, "quoted" value' });
    const limited = await exportOf({ format: 'jsonl', action: 'test.export', limit: 501 });
    expect(limited.text.trimEnd().split('\n')).toHaveLength(501);
  });

  it('streams CSV with a header, RFC 4180 quoting and formulas defused', async () => {
    const res = await exportOf({ format: 'csv', action: 'test.export', limit: 2_000 });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const lines = res.text.trimEnd().split('\r\n');
    expect(lines[0]?.startsWith('id,at,request_id,action,outcome,tenant_id,caller_id')).toBe(true);
    expect(lines).toHaveLength(1_201);
    expect(lines.at(-1)).toContain(`"'=HYPERLINK(""x"")"`);
    expect(lines.at(-1)).toContain('"{""n"":0,""note"":""a, \\""quoted\\"" value""}"');
  });

  it('refuses non-admin keys with 403 and bad queries with 400', async () => {
    const refused = await exportOf({ format: 'csv' }, keys.user);
    expect([refused.status, errorCode(refused.body)]).toEqual([403, 'FORBIDDEN']);
    const bad: Record<string, string>[] = [{ format: 'xml' }, {}, { format: 'csv', colour: 'red' }];
    for (const query of bad) {
      const res = await exportOf(query);
      expect([res.status, errorCode(res.body)]).toEqual([400, 'BAD_REQUEST']);
    }
    const audited = await broker.database.prisma.auditEvent.count({
      where: { action: 'admin.audit.export' },
    });
    expect(audited).toBeGreaterThanOrEqual(5);
  });
});
