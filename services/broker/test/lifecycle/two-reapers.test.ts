// Two broker instances (each its own database connection pool and Redis
// client) reaping one Postgres database at the same moment.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '@sbx/service-kit';
import type { Coordination } from '../../src/adapters/redis/coordination.js';
import { createCoordination } from '../../src/adapters/redis/create-coordination.js';
import { InProcessCoordination } from '../../src/adapters/redis/in-process-coordination.js';
import {
  createLeaseReaper,
  type LeaseReaper,
  type ReaperReport,
} from '../../src/domain/lifecycle/lease-reaper.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { ReaperRepository } from '../../src/store/reaper-repository.js';
import type { SandboxRecord } from '../../src/store/sandbox-repository.js';
import { deleteKeysMatching, isRedisReachable, TEST_REDIS_URL } from '../redis/coordination-harness.js';
import { backends, useTestDatabase } from '../support/test-database.js';
import {
  createKit,
  IDLE_TIMEOUT_MS,
  PROVISIONING_TIMEOUT_MS,
  SUSPEND_AFTER_IDLE_MS,
  type LifecycleKit,
} from './lifecycle-kit.js';

const postgres = backends.find((backend) => backend.name === 'postgres')!;
const redisUp = process.env['CI'] === 'true' || (await isRedisReachable());
if (!redisUp) console.warn(`!!! Redis at ${TEST_REDIS_URL} is unreachable: SKIPPING the two-reaper tests.`);
const RUN_PREFIX = `sbxtest-reaper-${randomUUID().slice(0, 8)}`;

function secondReaper(kit: LifecycleKit, database: Database, coordination: Coordination): LeaseReaper {
  return createLeaseReaper({
    idleTimeoutMs: IDLE_TIMEOUT_MS,
    suspendAfterIdleMs: SUSPEND_AFTER_IDLE_MS,
    provisioningTimeoutMs: PROVISIONING_TIMEOUT_MS,
    repository: new ReaperRepository(database.prisma),
    audit: new AuditRepository(database.prisma),
    provider: kit.provider,
    coordination,
    clock: kit.now,
    logger: createLogger({ service: 'second-broker', level: 'silent' }),
  });
}

/** Per sandbox: its state changes in order, as the audit log has them. */
async function auditedChanges(kit: LifecycleKit, sandboxes: readonly SandboxRecord[]): Promise<string[][]> {
  return Promise.all(
    sandboxes.map(async (sandbox) =>
      (await kit.audit.listBySandbox(sandbox.id))
        .filter((row) => row.outcome === 'ok')
        .map((row) => {
          const detail = row.detail as { from: string; to: string };
          return `${detail.from}>${detail.to}`;
        }),
    ),
  );
}

function callCount(
  kit: LifecycleKit,
  operation: 'stop' | 'destroy',
  sandboxes: readonly SandboxRecord[],
): number[] {
  return sandboxes.map((sandbox) => kit.provider.calls(operation).filter((id) => id === sandbox.id).length);
}

function changedIds(reports: readonly ReaperReport[]): string[] {
  return reports.flatMap((report) => report.changes.map((change) => `${change.sandboxId}:${change.to}`));
}

(postgres.available && redisUp ? describe : describe.skip)('two lease reapers on one database', () => {
  const db = useTestDatabase(postgres);
  let second: Database;
  const opened: Coordination[] = [];
  beforeAll(async () => {
    second = await openDatabase({ databaseUrl: db().url, migrate: false });
  });
  afterAll(async () => {
    await Promise.all(opened.map((coordination) => coordination.close()));
    await second.close();
    await deleteKeysMatching(`${RUN_PREFIX}*`);
  });

  const seedMix = async (kit: LifecycleKit) => ({
    toIdleThenSuspend: await Promise.all([1, 2, 3].map(() => kit.seed({ state: 'active', leaseMs: 1000 }))),
    toSuspend: await Promise.all([1, 2, 3].map(() => kit.seed({ state: 'idle', leaseMs: 0 }))),
    pastHardTtl: await Promise.all([1, 2].map(() => kit.seed({ state: 'active', hardMs: 1000 }))),
    stuck: await Promise.all([1, 2].map(() => kit.seed({ state: 'provisioning' }))),
  });

  it('with Redis coordination, one reaper runs at a time and every change happens exactly once', async () => {
    const [redisA, redisB] = await Promise.all(
      [1, 2].map(() => createCoordination({ redisUrl: TEST_REDIS_URL, keyPrefix: RUN_PREFIX })),
    );
    opened.push(redisA!, redisB!);
    const kit = createKit(db().prisma, { coordination: redisA! });
    const reaperB = secondReaper(kit, second, redisB!);
    // Rounds long enough that the two always overlap.
    kit.provider.setDelay('stop', 30);
    kit.provider.setDelay('destroy', 30);
    try {
      const mix = await seedMix(kit);
      kit.advance(PROVISIONING_TIMEOUT_MS + 60_000); // seeding takes real time; createdAt is the database's

      const first = await Promise.all([kit.reaper.runOnce(), reaperB.runOnce()]);
      expect(first.map((report) => report.ran).toSorted()).toEqual([false, true]);
      const later = [
        ...(await Promise.all([kit.reaper.runOnce(), reaperB.runOnce()])),
        ...(await Promise.all([kit.reaper.runOnce(), reaperB.runOnce()])),
      ];
      expect(later.flatMap((report) => report.changes)).toEqual([]);

      expect(await auditedChanges(kit, mix.toIdleThenSuspend)).toEqual(
        mix.toIdleThenSuspend.map(() => ['active>idle', 'idle>suspended']),
      );
      expect(await auditedChanges(kit, mix.toSuspend)).toEqual(mix.toSuspend.map(() => ['idle>suspended']));
      expect(await auditedChanges(kit, mix.pastHardTtl)).toEqual(
        mix.pastHardTtl.map(() => ['active>terminated']),
      );
      expect(await auditedChanges(kit, mix.stuck)).toEqual(mix.stuck.map(() => ['provisioning>failed']));
      expect(callCount(kit, 'stop', [...mix.toIdleThenSuspend, ...mix.toSuspend])).toEqual([
        1, 1, 1, 1, 1, 1,
      ]);
      expect(callCount(kit, 'destroy', [...mix.pastHardTtl, ...mix.stuck])).toEqual([1, 1, 1, 1]);
    } finally {
      await kit.close();
    }
  });

  it('without a shared lock, the conditional update still applies each change once', async () => {
    // Two processes with in-process coordination each: their locks exclude nothing.
    const kit = createKit(db().prisma);
    const reaperB = secondReaper(
      kit,
      second,
      new InProcessCoordination({ keyPrefix: RUN_PREFIX, now: kit.now }),
    );
    try {
      const mix = await seedMix(kit);
      kit.advance(PROVISIONING_TIMEOUT_MS + 60_000); // seeding takes real time; createdAt is the database's

      const reports = [
        ...(await Promise.all([kit.reaper.runOnce(), reaperB.runOnce()])),
        ...(await Promise.all([kit.reaper.runOnce(), reaperB.runOnce()])),
      ];
      expect(reports.every((report) => report.ran)).toBe(true);
      const changes = changedIds(reports);
      expect(new Set(changes).size).toBe(changes.length);

      expect(await auditedChanges(kit, mix.toIdleThenSuspend)).toEqual(
        mix.toIdleThenSuspend.map(() => ['active>idle', 'idle>suspended']),
      );
      expect(await auditedChanges(kit, mix.toSuspend)).toEqual(mix.toSuspend.map(() => ['idle>suspended']));
      expect(await auditedChanges(kit, mix.pastHardTtl)).toEqual(
        mix.pastHardTtl.map(() => ['active>terminated']),
      );
      expect(await auditedChanges(kit, mix.stuck)).toEqual(mix.stuck.map(() => ['provisioning>failed']));
    } finally {
      await kit.close();
    }
  });
});
