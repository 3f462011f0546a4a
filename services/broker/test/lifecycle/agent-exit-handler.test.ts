import { afterEach, beforeEach, expect, it } from '@jest/globals';
import { newSandbox, uid } from '../store/fixtures.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { createKit, type LifecycleKit } from './lifecycle-kit.js';

describeEachBackend('agent exit handler', (backend) => {
  const db = useTestDatabase(backend);
  let kit: LifecycleKit;
  beforeEach(() => {
    kit = createKit(db().prisma);
  });
  afterEach(async () => {
    await kit.close();
  });

  it('fails a sandbox whose agent crashed, releases its bindings and frees its scope', async () => {
    const sandbox = await kit.seed({ state: 'active' });
    const bindingId = await kit.bind(sandbox);

    kit.provider.crash(sandbox.id, 137); // the provider calls the handler's listener
    await kit.agentExit.drain();

    expect(await kit.state(sandbox.id)).toMatchObject({
      state: 'failed',
      live: null,
      failedAt: new Date(kit.now()),
      failureReason: 'the sandbox agent exited with code 137',
    });
    expect(await kit.bindings.findById(bindingId, { tenantId: sandbox.tenantId })).toMatchObject({
      live: null,
    });
    const rows = await kit.audit.listBySandbox(sandbox.id);
    expect(rows).toEqual([
      expect.objectContaining({
        action: 'sandbox.state',
        outcome: 'ok',
        callerId: 'agent-exit',
        detail: expect.objectContaining({
          from: 'active',
          to: 'failed',
          reason: 'agent_exit',
          exit_code: 137,
          released_bindings: 1,
        }),
      }),
    ]);
    const { tenantId, ownerId, scopeType, scopeId } = sandbox;
    await kit.sandboxes.create(newSandbox({ tenantId, ownerId, scopeType, scopeId }));
  });

  it('names the signal that killed an idle sandbox agent', async () => {
    const sandbox = await kit.seed({ state: 'idle' });
    expect(await kit.agentExit.handle(sandbox.id, null, 'SIGKILL')).toBe('failed');
    expect(await kit.state(sandbox.id)).toMatchObject({
      state: 'failed',
      failureReason: 'the sandbox agent was killed by SIGKILL',
    });
  });

  it('leaves suspended, terminated, failed and unknown sandboxes as they are', async () => {
    const suspended = await kit.seed({ state: 'suspended' });
    const terminated = await kit.seed({ state: 'terminated' });
    const failed = await kit.seed({ state: 'active' });
    expect(await kit.agentExit.handle(failed.id, 1, null)).toBe('failed');

    for (const sandbox of [suspended, terminated, failed]) {
      const before = await kit.state(sandbox.id);
      const auditBefore = await kit.audit.listBySandbox(sandbox.id);
      expect(await kit.agentExit.handle(sandbox.id, 2, null)).toBe('ignored');
      expect(await kit.state(sandbox.id)).toEqual(before);
      expect(await kit.audit.listBySandbox(sandbox.id)).toEqual(auditBefore);
    }
    expect(await kit.agentExit.handle(uid('missing'), 1, null)).toBe('ignored');
  });
});
