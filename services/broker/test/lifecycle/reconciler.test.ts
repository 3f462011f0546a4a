// The reconciler on the real store with the FAKE provider standing in for what
// a provider holds: orphans without a row, sandboxes of other broker instances
// (alive or dead, through real presence keys in the coordination store) and
// `provisioning` rows a dead instance left. A real broker killed with SIGKILL
// mid-provisioning is in reconciler-kill.test.ts.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { createLogger } from '@sbx/service-kit';
import { SigningKey } from '@sbx/tokens';
import {
  createInstancePresence,
  type InstancePresence,
} from '../../src/domain/lifecycle/instance-presence.js';
import { ABANDONED } from '../../src/domain/lifecycle/reconcile-sandbox.js';
import { createReconciler } from '../../src/domain/lifecycle/reconciler.js';
import { reconcileAtStartup } from '../../src/domain/lifecycle/startup-reconcile.js';
import type { SandboxRecord } from '../../src/store/sandbox-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { createKit, type LifecycleKit, type SeedOptions } from './lifecycle-kit.js';

const PRESENCE_TTL_MS = 10_000;
const silent = createLogger({ service: 'reconciler-test', level: 'silent' });

describeEachBackend('reconciler (fake provider)', (backend) => {
  const db = useTestDatabase(backend);
  let kit: LifecycleKit;
  let me: InstancePresence;
  let other: InstancePresence;
  beforeEach(async () => {
    kit = createKit(db().prisma);
    const presence = (name: string) =>
      createInstancePresence({
        coordination: kit.coordination,
        instanceId: `brk_${name}_${randomUUID()}`,
        logger: silent,
        ttlMs: PRESENCE_TTL_MS,
      });
    me = presence('me');
    other = presence('other');
    await me.start();
    await other.start();
  });
  afterEach(async () => {
    await Promise.all([me.stop(), other.stop()]);
    await kit.close();
  });

  const reconcile = () =>
    reconcileAtStartup({
      repository: kit.repository,
      provider: kit.provider,
      coordination: kit.coordination,
      clock: kit.now,
      logger: silent,
      presence: me,
      trigger: 'periodic',
    });
  const hostedBy = async (sandbox: SandboxRecord, host: string | null): Promise<SandboxRecord> =>
    db().prisma.sandbox.update({ where: { id: sandbox.id }, data: { hostInstance: host } });
  const seedHosted = async (host: string | null, options: SeedOptions = {}) =>
    hostedBy(await kit.seed(options), host);
  const createInProvider = async (sandboxId: string) => {
    if ((await kit.provider.status(sandboxId)) !== 'missing') return;
    await kit.provider.create({
      sandboxId,
      tenantId: 'tenant-orphans',
      signingKey: SigningKey.generate(),
      tokenIssuer: 'sbx-broker',
      network: 'on',
    });
  };

  describe('orphans', () => {
    it('destroys what the provider holds without a row or under a terminated row, keeps failed ones', async () => {
      const rowless = `sbx_orphan_${randomUUID()}`;
      await createInProvider(rowless);
      const terminated = await seedHosted(me.instanceId, { state: 'terminated' });
      await createInProvider(terminated.id);
      const failed = await seedHosted(me.instanceId, { state: 'failed' });
      await createInProvider(failed.id);
      const live = await seedHosted(me.instanceId, { state: 'active' });

      const report = await reconcile();

      expect([...report.orphansDestroyed].toSorted()).toEqual([rowless, terminated.id].toSorted());
      expect(await kit.provider.status(rowless)).toBe('missing');
      expect(await kit.provider.status(terminated.id)).toBe('missing');
      expect(await kit.provider.status(failed.id)).toBe('running');
      expect(await kit.provider.status(live.id)).toBe('running');
    });
  });

  describe('sandboxes of other broker instances', () => {
    it('leaves a live instance its sandboxes, takes them over once its presence expires', async () => {
      const theirs = await seedHosted(other.instanceId, { state: 'active' });
      await kit.provider.stop(theirs.id);

      const whileAlive = await reconcile();
      expect(whileAlive.foreign).toBeGreaterThanOrEqual(1);
      expect((await kit.state(theirs.id)).state).toBe('active');

      // SIGKILLed: it stops renewing (no stop(), no delete); its key expires on the clock.
      await other.stop();
      await reconcile();
      expect((await kit.state(theirs.id)).state).toBe('suspended');
    });

    it("an instance's presence ends when its key expires, not only when it says goodbye", async () => {
      const killed = createInstancePresence({
        coordination: kit.coordination,
        instanceId: `brk_killed_${randomUUID()}`,
        logger: silent,
        // Its renewal timer (a third of this, in real time) never fires during the test.
        ttlMs: 600_000,
      });
      await killed.start();
      expect(await me.isAlive(killed.instanceId)).toBe(true);
      // What SIGKILL leaves: a key nobody renews, until its TTL passes on the store's clock.
      kit.advance(600_001);
      expect(await me.isAlive(killed.instanceId)).toBe(false);
      expect(await me.isAlive(me.instanceId)).toBe(true);
      await killed.stop();
    });
  });

  describe('provisioning rows', () => {
    it('fails and destroys one whose creator instance is dead, with a reason saying so', async () => {
      const deadHost = `brk_dead_${randomUUID()}`;
      const abandoned = await seedHosted(deadHost, { state: 'provisioning' });
      await createInProvider(abandoned.id); // the half-made sandbox the dead broker left

      const report = await reconcile();

      expect(report.changes.filter((c) => c.sandboxId === abandoned.id)).toEqual([
        { sandboxId: abandoned.id, from: 'provisioning', to: 'failed', reason: 'reconcile' },
      ]);
      const row = await kit.state(abandoned.id);
      expect(row.state).toBe('failed');
      expect(row.failureReason).toBe(ABANDONED);
      expect(await kit.provider.status(abandoned.id)).toBe('missing');
    });

    it("leaves its own instance's, a live instance's and an unhosted one's to their creators and the reaper", async () => {
      const mine = await seedHosted(me.instanceId, { state: 'provisioning' });
      const theirs = await seedHosted(other.instanceId, { state: 'provisioning' });
      const unhosted = await seedHosted(null, { state: 'provisioning' });

      await reconcile();

      for (const sandbox of [mine, theirs, unhosted])
        expect((await kit.state(sandbox.id)).state).toBe('provisioning');
    });
  });

  it('runs one round at a time across instances (the reconciler lock)', async () => {
    const deps = {
      repository: kit.repository,
      provider: kit.provider,
      coordination: kit.coordination,
      clock: kit.now,
      logger: silent,
      presence: me,
    };
    const held = await kit.coordination.acquireLock('reconciler', 60_000);
    expect(await createReconciler(deps).runOnce()).toBeUndefined();
    await held?.release();
    expect(await createReconciler(deps).runOnce()).toEqual(
      expect.objectContaining({ busy: 0, failures: [] }),
    );
  });
});
