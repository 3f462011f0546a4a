// Start-up reconciliation on the real store, with the FAKE provider standing in
// for agents that died with the previous broker process (`stop` behind the
// database's back). The real local provider and a real broker restart are in
// broker-restart.test.ts.
import { afterEach, beforeEach, expect, it } from '@jest/globals';
import { createLogger } from '@sbx/service-kit';
import { sandboxLockKey } from '../../src/domain/lifecycle/sandbox-lock.js';
import {
  reconcileAtStartup,
  type StartupReconcileDeps,
  type StartupReconcileReport,
} from '../../src/domain/lifecycle/startup-reconcile.js';
import { providerUnavailable, sandboxNotFound } from '../../src/providers/provider.js';
import type { SandboxRecord } from '../../src/store/sandbox-repository.js';
import { newSandbox } from '../store/fixtures.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { createKit, type LifecycleKit, type SeedOptions } from './lifecycle-kit.js';

// Tests share one database per backend: every assertion is about the test's own sandboxes.
function changesOf(report: StartupReconcileReport, sandboxId: string) {
  return report.changes.filter((change) => change.sandboxId === sandboxId);
}

describeEachBackend('start-up reconciliation (fake provider)', (backend) => {
  const db = useTestDatabase(backend);
  let kit: LifecycleKit;
  beforeEach(() => {
    kit = createKit(db().prisma);
  });
  afterEach(async () => {
    await kit.close();
  });

  const reconcile = (options: Partial<StartupReconcileDeps> = {}) =>
    reconcileAtStartup({
      repository: kit.repository,
      provider: kit.provider,
      coordination: kit.coordination,
      clock: kit.now,
      logger: createLogger({ service: 'startup-reconcile-test', level: 'silent' }),
      ...options,
    });

  /** A seeded sandbox that records where its agent listened, as a created one does. */
  const seedServing = async (options: SeedOptions = {}): Promise<SandboxRecord> => {
    const sandbox = await kit.seed(options);
    const host = `${sandbox.id}.sandbox.invalid`;
    return db().prisma.sandbox.update({
      where: { id: sandbox.id },
      data: { httpBaseUrl: `http://${host}`, wsBaseUrl: `ws://${host}` },
    });
  };
  const reconcileAudit = async (sandboxId: string) =>
    (await kit.audit.listBySandbox(sandboxId))
      .filter((row) => row.callerId === 'startup-reconcile')
      .map((row) => ({ action: row.action, outcome: row.outcome, detail: row.detail }));

  it('suspends active and idle sandboxes whose agent is not running, forgets their dataplane, audits each', async () => {
    const active = await seedServing({ state: 'active' });
    const idle = await seedServing({ state: 'idle' });
    const binding = await kit.bind(active);
    for (const sandbox of [active, idle]) await kit.provider.stop(sandbox.id);

    const report = await reconcile();

    for (const sandbox of [active, idle]) {
      expect(changesOf(report, sandbox.id)).toEqual([
        { sandboxId: sandbox.id, from: sandbox.state, to: 'suspended', reason: 'startup_reconcile' },
      ]);
      expect(await kit.state(sandbox.id)).toMatchObject({
        state: 'suspended',
        live: true,
        suspendedAt: new Date(kit.now()),
        httpBaseUrl: null,
        wsBaseUrl: null,
      });
      expect(await reconcileAudit(sandbox.id)).toEqual([
        {
          action: 'sandbox.state',
          outcome: 'ok',
          detail: {
            from: sandbox.state,
            to: 'suspended',
            reason: 'startup_reconcile',
            provider_status: 'stopped',
            released_bindings: 0,
            failure_reason: null,
          },
        },
      ]);
    }
    // Suspended still serves its scope: the holder keeps its binding and resumes it on its next attach.
    expect(await kit.bindings.findByIdAnyOwner(binding)).toMatchObject({ live: true });
  });

  it('leaves sandboxes the provider runs untouched, and those of provisioning or of another provider', async () => {
    const running = [await seedServing({ state: 'active' }), await seedServing({ state: 'idle' })];
    const suspended = await kit.seed({ state: 'suspended' });
    const provisioning = await kit.seed({ state: 'provisioning' });
    // Recorded active, unknown to this provider ('fake'): another provider's to judge.
    const other = await kit.sandboxes.create(newSandbox({ provider: 'local' }));
    await kit.sandboxes.transition(other.id, 'active', { httpBaseUrl: 'http://127.0.0.1:9' });
    const before = await Promise.all(
      [...running, suspended, provisioning, other].map((s) => kit.state(s.id)),
    );

    const report = await reconcile();

    for (const sandbox of before) {
      expect(changesOf(report, sandbox.id)).toEqual([]);
      expect(await kit.state(sandbox.id)).toEqual(sandbox);
      expect(await reconcileAudit(sandbox.id)).toEqual([]);
    }
    expect(kit.provider.calls('stop').filter((id) => before.some((s) => s.id === id))).toEqual([
      suspended.id, // by the seed, not by the reconciliation
    ]);
  });

  it('fails a sandbox its provider no longer has, freeing its scope and releasing its bindings', async () => {
    const gone = await seedServing({ state: 'active' });
    const goneSuspended = await kit.seed({ state: 'suspended' });
    const binding = await kit.bind(gone);
    for (const sandbox of [gone, goneSuspended]) await kit.provider.destroy(sandbox.id);

    const report = await reconcile();

    for (const sandbox of [gone, goneSuspended]) {
      expect(changesOf(report, sandbox.id)).toEqual([
        { sandboxId: sandbox.id, from: sandbox.state, to: 'failed', reason: 'startup_reconcile' },
      ]);
      expect(await kit.state(sandbox.id)).toMatchObject({
        state: 'failed',
        live: null,
        failureReason: 'the provider no longer has this sandbox',
      });
    }
    expect(await kit.bindings.findByIdAnyOwner(binding)).toMatchObject({ live: null });
    expect((await reconcileAudit(gone.id))[0]?.detail).toMatchObject({
      provider_status: 'missing',
      released_bindings: 1,
    });
  });

  it('suspends even when sweeping the dead agent fails, and fails it when stop finds nothing', async () => {
    const unswept = await seedServing({ state: 'active' });
    const lost = await seedServing({ state: 'active' });
    for (const sandbox of [unswept, lost]) await kit.provider.stop(sandbox.id);
    // One reconciliation runs both at once: order the injected failures by walking them one at a time.
    kit.provider.failNext('stop', providerUnavailable('sweep failed'));
    await reconcile({ concurrency: 1, batchSize: 1, provider: onlyFor(kit, unswept.id) });
    kit.provider.failNext('stop', sandboxNotFound(lost.id));
    await reconcile({ concurrency: 1, batchSize: 1, provider: onlyFor(kit, lost.id) });

    expect(await kit.state(unswept.id)).toMatchObject({ state: 'suspended', httpBaseUrl: null });
    expect((await reconcileAudit(unswept.id))[0]?.detail).toMatchObject({ stop_error: 'sweep failed' });
    expect(await kit.state(lost.id)).toMatchObject({ state: 'failed', live: null });
  });

  it('skips a sandbox whose lock someone holds, and reports a provider that cannot answer', async () => {
    const locked = await seedServing({ state: 'active' });
    const unanswered = await seedServing({ state: 'active' });
    for (const sandbox of [locked, unanswered]) await kit.provider.stop(sandbox.id);
    const lock = await kit.coordination.acquireLock(sandboxLockKey(locked.id), 60_000);
    const failing = {
      name: kit.provider.name,
      stop: (id: string) => kit.provider.stop(id),
      destroy: (id: string) => kit.provider.destroy(id),
      list: () => kit.provider.list(),
      status: async (id: string) => {
        if (id === unanswered.id) throw providerUnavailable('status unavailable');
        return kit.provider.status(id);
      },
    };

    const report = await reconcile({ provider: failing });
    expect(report.busy).toBeGreaterThanOrEqual(1);
    expect(report.failures.filter((failure) => failure.sandboxId === unanswered.id)).toEqual([
      { sandboxId: unanswered.id, code: 'PROVIDER_UNAVAILABLE', message: 'status unavailable' },
    ]);
    for (const sandbox of [locked, unanswered]) expect((await kit.state(sandbox.id)).state).toBe('active');

    await lock?.release();
    await reconcile();
    for (const sandbox of [locked, unanswered]) expect((await kit.state(sandbox.id)).state).toBe('suspended');
  });

  it('pages through many sandboxes, a few at a time', async () => {
    const dead = await Promise.all(Array.from({ length: 11 }, () => seedServing({ state: 'active' })));
    const alive = await Promise.all(Array.from({ length: 4 }, () => seedServing({ state: 'active' })));
    for (const sandbox of dead) await kit.provider.stop(sandbox.id);
    kit.provider.setDelay('stop', 20);

    const report = await reconcile({ batchSize: 3, concurrency: 2 });

    for (const sandbox of dead) expect(changesOf(report, sandbox.id)).toHaveLength(1);
    const states = await Promise.all([...dead, ...alive].map(async (s) => (await kit.state(s.id)).state));
    expect(states).toEqual([...dead.map(() => 'suspended'), ...alive.map(() => 'active')]);
    expect(kit.provider.maxConcurrent('stop')).toBeLessThanOrEqual(2);
  });
});

/** The kit's provider, answering 'running' for every sandbox but `sandboxId` (one reconciled at a time). */
function onlyFor(kit: LifecycleKit, sandboxId: string): StartupReconcileDeps['provider'] {
  return {
    name: kit.provider.name,
    stop: (id) => kit.provider.stop(id),
    destroy: (id) => kit.provider.destroy(id),
    list: () => kit.provider.list(),
    status: async (id) => (id === sandboxId ? kit.provider.status(id) : 'running'),
  };
}
