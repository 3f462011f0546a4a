// The store under execute_code (docs/execute-code.md): quota counters exact under
// concurrency, windows that reset with the (injected) clock, counters shared by broker
// instances; sandbox_invocations append-only, its retention capped at 180 days by the
// database, and the purge.
import { createHash, randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { quotaWindows } from '../../src/domain/execute-code/quota-windows.js';
import { ExecuteCodeQuotaRepository } from '../../src/store/execute-code-quota-repository.js';
import { InvocationRepository, type NewInvocation } from '../../src/store/invocation-repository.js';
import { openDatabase } from '../../src/store/database.js';
import { backends, useTestDatabase } from '../support/test-database.js';
import { purgeRound } from '../../src/broker-loops.js';
import { createRepositories } from '../../src/store/index.js';
import { captureLogger } from '../support/broker-harness.js';

const postgres = backends.find((b) => b.name === 'postgres')!;
const DAY = 86_400_000;

function invocation(overrides: Partial<NewInvocation> = {}): NewInvocation {
  const createdAt = new Date();
  return {
    id: randomUUID(),
    createdAt,
    tenantId: `tenant_${randomUUID()}`,
    agentId: 'agent-1',
    sessionId: null,
    sandboxId: null,
    scopeType: 'thread',
    scopeId: 'thr_1',
    language: 'python',
    executedCodeHash: createHash('sha256').update('print(1)').digest('hex'),
    stdoutBytes: 2,
    stderrBytes: 0,
    stdoutTruncated: false,
    stderrTruncated: false,
    exitStatus: 'ok',
    failureReason: null,
    durationMs: 12,
    purgeAfter: new Date(createdAt.getTime() + 30 * DAY),
    ...overrides,
  };
}

(postgres.available ? describe : describe.skip)('execute_code store [postgres]', () => {
  const db = useTestDatabase(postgres);
  const quota = () => new ExecuteCodeQuotaRepository(db().prisma);
  const invocations = () => new InvocationRepository(db().prisma);

  it('takes exactly the cap from 50 concurrent callers, and a refusal takes nothing from the other cap', async () => {
    const tenant = `tenant_${randomUUID()}`;
    const now = Date.now();
    const windows = quotaWindows(tenant, 'agent', { tenantDaily: 1000, agentHourly: 10 }, now);
    const takes = await Promise.all(Array.from({ length: 50 }, () => quota().take(windows)));
    expect(takes.filter((t) => t.taken)).toHaveLength(10);
    expect(takes.filter((t) => !t.taken && t.dimension === 'agent_hourly')).toHaveLength(40);
    // The 40 refused calls were rolled back on the tenant's day too.
    expect(await quota().count(windows[0])).toBe(10);
  }, 60_000);

  it('takes several units at once only when they all fit under both caps, and gives them back', async () => {
    const tenant = `tenant_${randomUUID()}`;
    const windows = quotaWindows(tenant, 'agent', { tenantDaily: 10, agentHourly: 6 }, Date.now());
    const counts = () => Promise.all(windows.map((w) => quota().count(w)));
    expect(await quota().take(windows, 4)).toEqual({ taken: true });
    expect(await quota().take(windows, 7)).toEqual({ taken: false, dimension: 'tenant_daily' });
    // The day has room for 3 more, the hour for 2: the hour refuses, and the day is undone.
    expect(await quota().take(windows, 3)).toEqual({ taken: false, dimension: 'agent_hourly' });
    expect(await counts()).toEqual([4, 4]);
    await quota().giveBack(windows, 3);
    expect(await counts()).toEqual([1, 1]);
    await quota().giveBack(windows, 5);
    expect(await counts()).toEqual([0, 0]);
  });

  it('resets each window with the clock: the next hour and the next UTC day start from zero', async () => {
    const tenant = `tenant_${randomUUID()}`;
    const lateEvening = Date.UTC(2026, 10, 27, 23, 59, 59, 500);
    const caps = { tenantDaily: 3, agentHourly: 2 };
    const at = (time: number, agent = 'a') => quota().take(quotaWindows(tenant, agent, caps, time));
    expect((await at(lateEvening)).taken).toBe(true);
    expect((await at(lateEvening)).taken).toBe(true);
    expect(await at(lateEvening)).toEqual({ taken: false, dimension: 'agent_hourly' });
    expect((await at(lateEvening, 'b')).taken).toBe(true);
    expect(await at(lateEvening, 'c')).toEqual({ taken: false, dimension: 'tenant_daily' });
    const windows = quotaWindows(tenant, 'a', caps, lateEvening);
    expect(windows.map((w) => w.resetsAt.toISOString())).toEqual([
      '2026-11-28T00:00:00.000Z',
      '2026-11-28T00:00:00.000Z',
    ]);
    const nextDay = lateEvening + 1000;
    expect((await at(nextDay)).taken).toBe(true);
    expect((await at(nextDay, 'c')).taken).toBe(true);
  });

  it('a cap of 0 refuses everything and counters are shared by another broker process on the database', async () => {
    const tenant = `tenant_${randomUUID()}`;
    const now = Date.now();
    expect(await quota().take(quotaWindows(tenant, 'a', { tenantDaily: 0, agentHourly: 100 }, now))).toEqual({
      taken: false,
      dimension: 'tenant_daily',
    });
    const caps = { tenantDaily: 2, agentHourly: 100 };
    expect((await quota().take(quotaWindows(tenant, 'a', caps, now))).taken).toBe(true);
    expect((await quota().take(quotaWindows(tenant, 'a', caps, now))).taken).toBe(true);
    // A second connection pool, as after a broker restart.
    const other = await openDatabase({ databaseUrl: db().url, migrate: false });
    try {
      const again = await new ExecuteCodeQuotaRepository(other.prisma).take(
        quotaWindows(tenant, 'a', caps, now),
      );
      expect(again).toEqual({ taken: false, dimension: 'tenant_daily' });
    } finally {
      await other.close();
    }
  });

  it('keeps invocations append-only with at most 180 days of retention, and purges expired ones', async () => {
    const row = invocation();
    await invocations().record(row);
    await expect(
      db().prisma.sandboxInvocation.update({ where: { id: row.id }, data: { exitStatus: 'error' } }),
    ).rejects.toThrow(/append-only/);
    const createdAt = new Date();
    await expect(
      invocations().record(invocation({ createdAt, purgeAfter: new Date(createdAt.getTime() + 181 * DAY) })),
    ).rejects.toThrow(/record sandbox invocation/);
    await expect(invocations().record(invocation({ executedCodeHash: 'not-a-hash' }))).rejects.toThrow(
      /record sandbox invocation/,
    );

    const old = invocation({
      createdAt: new Date(Date.now() - 40 * DAY),
      purgeAfter: new Date(Date.now() - 10 * DAY),
    });
    await invocations().record(old);
    const purged = await invocations().purgeExpired(new Date());
    expect(purged).toBeGreaterThanOrEqual(1);
    const left = await db().prisma.sandboxInvocation.findMany({ where: { id: { in: [row.id, old.id] } } });
    expect(left.map((r) => r.id)).toEqual([row.id]);
    await expect(
      db().prisma.tenantPolicy.create({
        data: { tenantId: `tenant_${randomUUID()}`, invocationRetentionDays: 181 },
      }),
    ).rejects.toThrow(/invocation_retention_check|check constraint/i);
  });

  it("the broker's purge round drops expired invocations and ended quota windows, nothing else", async () => {
    const now = Date.now();
    const expired = invocation({ createdAt: new Date(now - 40 * DAY), purgeAfter: new Date(now - DAY) });
    const kept = invocation();
    await invocations().record(expired);
    await invocations().record(kept);
    const tenant = `tenant_${randomUUID()}`;
    const caps = { tenantDaily: 5, agentHourly: 5 };
    const oldWindows = quotaWindows(tenant, 'a', caps, now - 3 * DAY);
    const currentWindows = quotaWindows(tenant, 'a', caps, now);
    await quota().take(oldWindows);
    await quota().take(currentWindows);
    await purgeRound({
      repositories: createRepositories(db().prisma),
      clock: () => now,
      logger: captureLogger([]),
    });
    const left = await db().prisma.sandboxInvocation.findMany({
      where: { id: { in: [expired.id, kept.id] } },
    });
    expect(left.map((r) => r.id)).toEqual([kept.id]);
    expect(await quota().count(oldWindows[0])).toBe(0);
    expect(await quota().count(currentWindows[0])).toBe(1);
  });
});
