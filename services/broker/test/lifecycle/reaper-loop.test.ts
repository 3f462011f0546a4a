import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from '@jest/globals';
import type { ReaperReport } from '../../src/domain/lifecycle/lease-reaper.js';
import { InProcessCoordination } from '../../src/adapters/redis/in-process-coordination.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { createKit, eventually, SUSPEND_AFTER_IDLE_MS, type LifecycleKit } from './lifecycle-kit.js';

const INTERVAL_MS = 20;

describeEachBackend('lease reaper loop', (backend) => {
  const db = useTestDatabase(backend);
  const kits: LifecycleKit[] = [];
  afterEach(async () => {
    await Promise.all(kits.splice(0).map((kit) => kit.close()));
  });

  it('runs rounds on its own, goes on after a provider failure, and runs none once stopped', async () => {
    const reports: ReaperReport[] = [];
    const kit = createKit(db().prisma, {
      intervalMs: INTERVAL_MS,
      onRound: (report) => reports.push(report),
    });
    kits.push(kit);
    const sandbox = await kit.seed({ state: 'idle', leaseMs: 0 });
    kit.advance(SUSPEND_AFTER_IDLE_MS + 1);
    kit.provider.failNext('stop');

    kit.reaper.start();
    kit.reaper.start(); // idempotent: still one loop
    await eventually(
      () => reports.some((report) => report.changes.some((change) => change.sandboxId === sandbox.id)),
      'a round that suspends the sandbox',
    );
    const failedRound = reports.findIndex((report) =>
      report.failures.some((f) => f.sandboxId === sandbox.id),
    );
    const suspendedRound = reports.findIndex((report) =>
      report.changes.some((c) => c.sandboxId === sandbox.id),
    );
    expect(failedRound).toBeGreaterThanOrEqual(0);
    expect(suspendedRound).toBeGreaterThan(failedRound);
    expect(kit.provider.calls('stop').filter((id) => id === sandbox.id)).toHaveLength(2);
    expect(kit.provider.maxConcurrent('stop')).toBe(1);

    await kit.reaper.stop();
    const roundsAtStop = reports.length;
    // Five intervals of silence: a timer left behind would have run a round by now.
    await sleep(5 * INTERVAL_MS);
    expect(reports).toHaveLength(roundsAtStop);
  });

  it('logs a round that fails as a whole and tries again at the next interval', async () => {
    const coordination = new InProcessCoordination({ keyPrefix: 'closed-coordination' });
    await coordination.close(); // every lock request now fails with BACKEND_UNAVAILABLE
    const kit = createKit(db().prisma, { intervalMs: INTERVAL_MS, coordination });
    kits.push(kit);
    const failures = () => kit.logs.filter((line) => line.msg.startsWith('lease reaper round failed'));

    kit.reaper.start();
    await eventually(() => failures().length >= 3, 'three failed rounds');
    await kit.reaper.stop();
    expect(failures()[0]).toMatchObject({
      level: 50,
      err: expect.objectContaining({ message: expect.any(String) }),
    });
    await expect(kit.reaper.runOnce()).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
  });

  it('stops promptly in the middle of a round, leaving the rest for the next start', async () => {
    const kit = createKit(db().prisma, { intervalMs: INTERVAL_MS, concurrency: 1 });
    kits.push(kit);
    const first = await kit.seed({ state: 'idle', leaseMs: 0 });
    const second = await kit.seed({ state: 'idle', leaseMs: 0 });
    kit.advance(SUSPEND_AFTER_IDLE_MS + 1);
    const release = kit.provider.hold('stop');

    kit.reaper.start();
    await eventually(() => kit.provider.calls('stop').length > 0, 'the first stop');
    const stopped = kit.reaper.stop();
    release();
    await stopped;
    const states = [(await kit.state(first.id)).state, (await kit.state(second.id)).state];
    expect(states.toSorted()).toEqual(['idle', 'suspended']);
    expect(kit.provider.calls('stop')).toHaveLength(1);
  });
});
