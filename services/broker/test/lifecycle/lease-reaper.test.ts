import { afterEach, beforeEach, expect, it } from '@jest/globals';
import type { ReaperReport } from '../../src/domain/lifecycle/lease-reaper.js';
import { newSandbox } from '../store/fixtures.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import {
  createKit,
  eventually,
  FAILED_RETENTION_MS,
  IDLE_TIMEOUT_MS,
  PROVISIONING_TIMEOUT_MS,
  SUSPEND_AFTER_IDLE_MS,
  type LifecycleKit,
} from './lifecycle-kit.js';

// Tests share one database per backend, so a round may also move sandboxes of
// earlier tests: every assertion is about the test's own sandboxes.
function changesOf(report: ReaperReport, sandboxId: string) {
  return report.changes.filter((change) => change.sandboxId === sandboxId);
}

function failuresOf(report: ReaperReport, sandboxId: string) {
  return report.failures.filter((failure) => failure.sandboxId === sandboxId);
}

describeEachBackend('lease reaper', (backend) => {
  const db = useTestDatabase(backend);
  let kit: LifecycleKit;
  beforeEach(() => {
    kit = createKit(db().prisma);
  });
  afterEach(async () => {
    await kit.close();
  });

  const callsFor = (operation: 'stop' | 'destroy', sandboxId: string) =>
    kit.provider.calls(operation).filter((id) => id === sandboxId);
  const auditOf = async (sandboxId: string) =>
    (await kit.audit.listBySandbox(sandboxId)).map((row) => ({ outcome: row.outcome, detail: row.detail }));

  it('idles a sandbox whose lease ran out, then suspends it after the grace, keeping its workspace', async () => {
    const sandbox = await kit.seed({ state: 'active' });
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([]);

    kit.advance(IDLE_TIMEOUT_MS + 1);
    const idled = await kit.reaper.runOnce();
    expect(idled.ran).toBe(true);
    expect(changesOf(idled, sandbox.id)).toEqual([
      { sandboxId: sandbox.id, from: 'active', to: 'idle', reason: 'lease_expired' },
    ]);
    expect(await kit.state(sandbox.id)).toMatchObject({
      state: 'idle',
      idleAt: new Date(kit.now()),
      live: true,
    });
    expect(await kit.provider.status(sandbox.id)).toBe('running');

    kit.advance(SUSPEND_AFTER_IDLE_MS - 1000);
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([]);
    kit.advance(2000);
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([
      { sandboxId: sandbox.id, from: 'idle', to: 'suspended', reason: 'lease_expired' },
    ]);
    expect(await kit.state(sandbox.id)).toMatchObject({ state: 'suspended', live: true });
    await kit.reaper.runOnce();
    expect(callsFor('stop', sandbox.id)).toHaveLength(1);
    expect(callsFor('destroy', sandbox.id)).toEqual([]);
    // Suspended, not destroyed: the workspace is there to resume.
    expect(await kit.provider.status(sandbox.id)).toBe('stopped');
    await expect(kit.provider.start(sandbox.id)).resolves.toMatchObject({ httpBaseUrl: expect.any(String) });

    expect(await auditOf(sandbox.id)).toEqual([
      {
        outcome: 'ok',
        detail: expect.objectContaining({ from: 'active', to: 'idle', reason: 'lease_expired' }),
      },
      {
        outcome: 'ok',
        detail: expect.objectContaining({ from: 'idle', to: 'suspended', reason: 'lease_expired' }),
      },
    ]);
  });

  it('keeps a sandbox active while heartbeats renew its lease', async () => {
    const sandbox = await kit.seed({ state: 'active' });
    kit.advance(IDLE_TIMEOUT_MS - 5000);
    expect(
      await kit.sandboxes.renewLease(sandbox.id, new Date(kit.now() + IDLE_TIMEOUT_MS), new Date(kit.now())),
    ).toBe(true);
    kit.advance(10_000); // past the first lease
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([]);
    expect((await kit.state(sandbox.id)).state).toBe('active');
    expect(await auditOf(sandbox.id)).toEqual([]);

    kit.advance(IDLE_TIMEOUT_MS); // past the renewed lease, no heartbeat since
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([
      { sandboxId: sandbox.id, from: 'active', to: 'idle', reason: 'lease_expired' },
    ]);
  });

  it('terminates a sandbox past its hard TTL whatever its lease: destroyed, bindings released, scope free', async () => {
    const sandbox = await kit.seed({ state: 'active', hardMs: 3_600_000 });
    const suspended = await kit.seed({ state: 'suspended', hardMs: 3_600_000 });
    const bindingId = await kit.bind(sandbox);
    kit.advance(3_600_001);
    await kit.sandboxes.renewLease(sandbox.id, new Date(kit.now() + IDLE_TIMEOUT_MS), new Date(kit.now()));

    const report = await kit.reaper.runOnce();
    expect(changesOf(report, sandbox.id)).toEqual([
      { sandboxId: sandbox.id, from: 'active', to: 'terminated', reason: 'hard_ttl' },
    ]);
    expect(changesOf(report, suspended.id)).toEqual([
      { sandboxId: suspended.id, from: 'suspended', to: 'terminated', reason: 'hard_ttl' },
    ]);
    expect(callsFor('destroy', sandbox.id)).toHaveLength(1);
    expect(callsFor('destroy', suspended.id)).toHaveLength(1);
    expect(await kit.provider.status(sandbox.id)).toBe('missing');
    expect(await kit.state(sandbox.id)).toMatchObject({
      state: 'terminated',
      live: null,
      terminatedAt: new Date(kit.now()),
    });
    const binding = await kit.bindings.findById(bindingId, { tenantId: sandbox.tenantId });
    expect(binding).toMatchObject({ live: null, releasedAt: new Date(kit.now()) });
    expect(await auditOf(sandbox.id)).toEqual([
      {
        outcome: 'ok',
        detail: expect.objectContaining({
          from: 'active',
          to: 'terminated',
          reason: 'hard_ttl',
          released_bindings: 1,
        }),
      },
    ]);

    // The scope takes a new sandbox, and the released actor can bind to it.
    const scope = {
      tenantId: sandbox.tenantId,
      ownerId: sandbox.ownerId,
      scopeType: sandbox.scopeType,
      scopeId: sandbox.scopeId,
    };
    const next = await kit.sandboxes.create(newSandbox(scope));
    expect((await kit.sandboxes.findLiveByScope(scope))?.id).toBe(next.id);
    await kit.bind(next);
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([]);
    expect(callsFor('destroy', sandbox.id)).toHaveLength(1);
  });

  it('fails a sandbox stuck in provisioning, destroys it and frees its scope', async () => {
    const stuck = await kit.seed({ state: 'provisioning' });
    kit.advance(PROVISIONING_TIMEOUT_MS - 10_000);
    expect(changesOf(await kit.reaper.runOnce(), stuck.id)).toEqual([]);

    kit.advance(20_000);
    expect(changesOf(await kit.reaper.runOnce(), stuck.id)).toEqual([
      { sandboxId: stuck.id, from: 'provisioning', to: 'failed', reason: 'provisioning_timeout' },
    ]);
    const record = await kit.state(stuck.id);
    expect(record).toMatchObject({ state: 'failed', live: null, failedAt: new Date(kit.now()) });
    expect(record.failureReason).toMatch(/provisioning did not finish within 120 s/);
    expect(callsFor('destroy', stuck.id)).toHaveLength(1);
    const { tenantId, ownerId, scopeType, scopeId } = stuck;
    await kit.sandboxes.create(newSandbox({ tenantId, ownerId, scopeType, scopeId }));
  });

  it('leaves a sandbox whose provider call failed for the next round and audits the error', async () => {
    const sandbox = await kit.seed({ state: 'idle', leaseMs: 0 });
    kit.advance(SUSPEND_AFTER_IDLE_MS + 1);
    kit.provider.failNext('stop');

    const failed = await kit.reaper.runOnce();
    expect(changesOf(failed, sandbox.id)).toEqual([]);
    expect(failuresOf(failed, sandbox.id)).toEqual([
      expect.objectContaining({ to: 'suspended', reason: 'lease_expired', code: 'PROVIDER_UNAVAILABLE' }),
    ]);
    expect((await kit.state(sandbox.id)).state).toBe('idle');
    expect(kit.logs).toContainEqual(
      expect.objectContaining({ msg: 'sandbox provider operation failed', sandbox_id: sandbox.id }),
    );

    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([
      { sandboxId: sandbox.id, from: 'idle', to: 'suspended', reason: 'lease_expired' },
    ]);
    expect(callsFor('stop', sandbox.id)).toHaveLength(2);
    expect(await auditOf(sandbox.id)).toEqual([
      {
        outcome: 'error',
        detail: expect.objectContaining({
          to: 'suspended',
          operation: 'stop',
          error_code: 'PROVIDER_UNAVAILABLE',
        }),
      },
      { outcome: 'ok', detail: expect.objectContaining({ from: 'idle', to: 'suspended' }) },
    ]);
  });

  it('records a sandbox resumed while the reaper stopped it as suspended, as the provider left it', async () => {
    const sandbox = await kit.seed({ state: 'idle', leaseMs: 0 });
    kit.advance(SUSPEND_AFTER_IDLE_MS + 1);
    const release = kit.provider.hold('stop');
    const round = kit.reaper.runOnce();
    await eventually(() => callsFor('stop', sandbox.id).length === 1, 'the reaper to stop the sandbox');
    // A negotiation resumes the idle sandbox meanwhile (no provider call for an idle one).
    await kit.sandboxes.transition(sandbox.id, 'active', { from: ['idle'] });
    release();

    expect(changesOf(await round, sandbox.id)).toEqual([
      { sandboxId: sandbox.id, from: 'active', to: 'suspended', reason: 'lease_expired' },
    ]);
    expect(await kit.provider.status(sandbox.id)).toBe('stopped');
    expect((await kit.state(sandbox.id)).state).toBe('suspended');
  });

  it('fails an idle sandbox the provider has lost instead of retrying it every round', async () => {
    const sandbox = await kit.seed({ state: 'idle', leaseMs: 0 });
    await kit.provider.destroy(sandbox.id);
    kit.advance(SUSPEND_AFTER_IDLE_MS + 1);
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([
      { sandboxId: sandbox.id, from: 'idle', to: 'failed', reason: 'lease_expired' },
    ]);
    expect(await kit.state(sandbox.id)).toMatchObject({
      state: 'failed',
      live: null,
      failureReason: 'the provider no longer has this sandbox',
    });
  });

  it('destroys a failed sandbox once its retention has passed, keeping why it failed', async () => {
    const sandbox = await kit.seed({ state: 'active' });
    expect(await kit.agentExit.handle(sandbox.id, 1, null)).toBe('failed');
    kit.advance(FAILED_RETENTION_MS - 1000);
    await kit.reaper.runOnce();
    expect(callsFor('destroy', sandbox.id)).toEqual([]);

    kit.advance(2000);
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toEqual([
      { sandboxId: sandbox.id, from: 'failed', to: 'terminated', reason: 'failed_retention' },
    ]);
    expect(await kit.provider.status(sandbox.id)).toBe('missing');
    expect(await kit.state(sandbox.id)).toMatchObject({
      state: 'terminated',
      failureReason: 'the sandbox agent exited with code 1',
    });
  });

  it('skips a sandbox whose lock someone else holds, and acts once it is free', async () => {
    const sandbox = await kit.seed({ state: 'active', leaseMs: 0 });
    kit.advance(1);
    const held = await kit.coordination.acquireLock(`sandbox:${sandbox.id}`, 60_000);
    const skipped = await kit.reaper.runOnce();
    expect(skipped.busy).toBeGreaterThanOrEqual(1);
    expect((await kit.state(sandbox.id)).state).toBe('active');

    await held?.release();
    expect(changesOf(await kit.reaper.runOnce(), sandbox.id)).toHaveLength(1);
  });

  it('releases bindings left on a sandbox that no longer serves its scope', async () => {
    const sandbox = await kit.seed({ state: 'active' });
    const bindingId = await kit.bind(sandbox);
    await kit.sandboxes.transition(sandbox.id, 'terminated'); // ended elsewhere, bindings left behind

    const report = await kit.reaper.runOnce();
    expect(report.releasedBindings).toBeGreaterThanOrEqual(1);
    expect(await kit.bindings.findById(bindingId, { tenantId: sandbox.tenantId })).toMatchObject({
      live: null,
    });
  });
});
