// The agents' counters as per-day deltas: same boot (what grew), a restarted agent (all of
// it), never negative; and the collector that asks running sandboxes' agents for them.
import { randomUUID } from 'node:crypto';
import { expect, it } from '@jest/globals';
import { createLogger } from '@sbx/service-kit';
import { createUsageCollector } from '../../src/domain/admin/usage-collector.js';
import type { AgentReport } from '../../src/providers/provider.js';
import { SandboxRepository } from '../../src/store/sandbox-repository.js';
import { counterDelta, UsageCounterRepository } from '../../src/store/usage-counter-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { newSandbox, uid } from './fixtures.js';

const counters = (bootId: string, commandsRun: number, fileBytesIn = 0, fileBytesOut = 0) => ({
  bootId,
  commandsRun,
  fileBytesIn,
  fileBytesOut,
});

const report = (bootId: string, commandsRun: number, fileBytesIn = 0, fileBytesOut = 0): AgentReport => ({
  bootId,
  usage: { commands_run: commandsRun, file_bytes_in: fileBytesIn, file_bytes_out: fileBytesOut },
  processes: [],
  shells: [],
});

const silent = createLogger({ service: 'usage-test', level: 'silent' });

it('counterDelta: growth within a boot, everything after a restart, never below 0', () => {
  expect(counterDelta(undefined, counters('a', 3, 10, 20))).toEqual({
    commandsRun: 3,
    fileBytesIn: 10,
    fileBytesOut: 20,
  });
  expect(counterDelta(counters('a', 3, 10, 20), counters('a', 5, 10, 25))).toEqual({
    commandsRun: 2,
    fileBytesIn: 0,
    fileBytesOut: 5,
  });
  expect(counterDelta(counters('a', 5, 10, 25), counters('b', 1, 0, 0))).toEqual({
    commandsRun: 1,
    fileBytesIn: 0,
    fileBytesOut: 0,
  });
  expect(counterDelta(counters('a', 5, 10, 25), counters('a', 4, 9, 0))).toEqual({
    commandsRun: 0,
    fileBytesIn: 0,
    fileBytesOut: 0,
  });
});

describeEachBackend('UsageCounterRepository', (backend) => {
  const db = useTestDatabase(backend);
  const repo = () => new UsageCounterRepository(db().prisma);
  const day = (tenantId: string, date: string) =>
    db().prisma.tenantUsageDay.findUnique({
      where: { tenantId_day: { tenantId, day: new Date(`${date}T00:00:00Z`) } },
    });
  const totals = async (tenantId: string, date: string) => {
    const row = await day(tenantId, date);
    return row === null ? null : [Number(row.commandsRun), Number(row.fileBytesIn), Number(row.fileBytesOut)];
  };
  const now = new Date('2026-03-04T10:00:00Z');

  it('adds what grew within a boot, all of it after a restart, and never takes away', async () => {
    const sandbox = uid('sbx');
    const tenant = uid('tenant');
    const boot1 = randomUUID();
    const boot2 = randomUUID();
    expect(await repo().record(sandbox, tenant, counters(boot1, 5, 100, 10), now)).toEqual({
      commandsRun: 5,
      fileBytesIn: 100,
      fileBytesOut: 10,
    });
    await repo().record(sandbox, tenant, counters(boot1, 7, 150, 10), now);
    expect(await totals(tenant, '2026-03-04')).toEqual([7, 150, 10]);

    // The agent restarted: its counters began again at 0.
    await repo().record(sandbox, tenant, counters(boot2, 3, 0, 4), now);
    expect(await totals(tenant, '2026-03-04')).toEqual([10, 150, 14]);

    // An older report of the same boot, arriving late, adds nothing and lowers nothing.
    expect(await repo().record(sandbox, tenant, counters(boot2, 1, 0, 0), now)).toEqual({
      commandsRun: 0,
      fileBytesIn: 0,
      fileBytesOut: 0,
    });
    await repo().record(sandbox, tenant, counters(boot2, 4, 0, 4), now);
    expect(await totals(tenant, '2026-03-04')).toEqual([11, 150, 14]);
    const last = await db().prisma.sandboxAgentCounters.findUnique({ where: { sandboxId: sandbox } });
    expect([last?.bootId, Number(last?.commandsRun)]).toEqual([boot2, 4]);
  });

  it('books a delta on the UTC day of its recording, and nothing for no growth', async () => {
    const sandbox = uid('sbx');
    const tenant = uid('tenant');
    const boot = randomUUID();
    await repo().record(sandbox, tenant, counters(boot, 0), new Date('2026-03-04T23:59:59Z'));
    expect(await day(tenant, '2026-03-04')).toBeNull();
    await repo().record(sandbox, tenant, counters(boot, 2, 8), new Date('2026-03-04T23:59:59.900Z'));
    await repo().record(sandbox, tenant, counters(boot, 5, 8), new Date('2026-03-05T00:00:00.100Z'));
    expect(await totals(tenant, '2026-03-04')).toEqual([2, 8, 0]);
    expect(await totals(tenant, '2026-03-05')).toEqual([3, 0, 0]);
  });

  it('counts concurrent recordings of the same values once', async () => {
    const sandbox = uid('sbx');
    const tenant = uid('tenant');
    const same = counters(randomUUID(), 9, 90, 900);
    await Promise.all([1, 2, 3].map(() => repo().record(sandbox, tenant, same, now)));
    expect(await totals(tenant, '2026-03-04')).toEqual([9, 90, 900]);
  });

  it('collects every running sandbox, and a sandbox the reaper ends just before it ends', async () => {
    const sandboxes = new SandboxRepository(db().prisma);
    const tenant = uid('tenant');
    const active = newSandbox({ tenantId: tenant });
    const idle = newSandbox({ tenantId: tenant });
    const provisioning = newSandbox({ tenantId: tenant });
    for (const made of [active, idle, provisioning]) await sandboxes.create(made);
    await sandboxes.transition(active.id, 'active');
    await sandboxes.transition(idle.id, 'active');
    await sandboxes.transition(idle.id, 'idle');
    const reports = new Map<string, AgentReport>([
      [active.id, report('boot-a', 2, 10, 0)],
      [provisioning.id, report('boot-p', 100)],
    ]);
    const asked: string[] = [];
    const collector = createUsageCollector({
      repository: repo(),
      provider: {
        inspect: async (id) => {
          asked.push(id);
          return reports.get(id);
        },
      },
      clock: () => now.getTime(),
      logger: silent,
    });
    // The idle sandbox's agent does not answer; the provisioning one is not asked.
    expect(await collector.collectOnce()).toEqual({ recorded: 1, missed: 1 });
    expect(asked.toSorted()).toEqual([active.id, idle.id].toSorted());
    expect(await totals(tenant, '2026-03-04')).toEqual([2, 10, 0]);

    const ended: string[] = [];
    const reaperView = collector.beforeEnding({
      stop: async (id) => {
        ended.push(`stop ${id}:${(await totals(tenant, '2026-03-04'))?.[0]}`);
      },
      destroy: async (id) => {
        ended.push(`destroy ${id}`);
      },
    });
    reports.set(active.id, report('boot-a', 6, 10, 0));
    await reaperView.stop(active.id);
    // Collected first: the stop saw the 4 new programs already booked.
    expect(ended).toEqual([`stop ${active.id}:6`]);
    await reaperView.destroy(uid('sbx_gone'));
    expect(ended).toHaveLength(2);
  });
});
