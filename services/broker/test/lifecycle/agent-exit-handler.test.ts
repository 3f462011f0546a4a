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

  it('records a restart on the workspace: the address the agent listens at now, and an audit row', async () => {
    const sandbox = await kit.seed({ state: 'idle' });
    const dataplane = {
      httpBaseUrl: 'http://127.0.0.1:4999',
      wsBaseUrl: 'ws://127.0.0.1:4999',
      workspacePath: '/workspace',
    };
    expect(
      await kit.agentExit.handle(sandbox.id, null, 'SIGKILL', {
        kind: 'restarting',
        crashes: 2,
        delayMs: 1000,
      }),
    ).toBe('ignored');
    expect(await kit.audit.listBySandbox(sandbox.id)).toEqual([]);
    expect(
      await kit.agentExit.handle(sandbox.id, null, 'SIGKILL', { kind: 'restarted', crashes: 2, dataplane }),
    ).toBe('restarted');
    expect(await kit.state(sandbox.id)).toMatchObject({
      state: 'idle',
      live: true,
      httpBaseUrl: dataplane.httpBaseUrl,
      wsBaseUrl: dataplane.wsBaseUrl,
    });
    expect(await kit.audit.listBySandbox(sandbox.id)).toEqual([
      expect.objectContaining({
        action: 'sandbox.agent_restarted',
        callerId: 'agent-exit',
        detail: { exit_code: null, signal: 'SIGKILL', crashes: 2, state: 'idle' },
      }),
    ]);
    // A sandbox that stopped meanwhile keeps no address of an agent it does not have.
    const suspended = await kit.seed({ state: 'suspended' });
    expect(
      await kit.agentExit.handle(suspended.id, 1, null, { kind: 'restarted', crashes: 1, dataplane }),
    ).toBe('ignored');
    expect((await kit.state(suspended.id)).httpBaseUrl).not.toBe(dataplane.httpBaseUrl);
  });

  it('fails a sandbox whose provider gave up restarting its agent, saying so and that its files are kept', async () => {
    const sandbox = await kit.seed({ state: 'active' });
    const report = { kind: 'gave_up', crashes: 5, windowMs: 600_000 } as const;
    expect(await kit.agentExit.handle(sandbox.id, null, 'SIGKILL', report)).toBe('failed');
    expect(await kit.state(sandbox.id)).toMatchObject({
      state: 'failed',
      live: null,
      failureReason:
        'its agent crashed 5 times within 600 s (the last time it was killed by SIGKILL); it is not ' +
        'restarted again, and its workspace is kept until the failed retention ends',
    });
    expect((await kit.audit.listBySandbox(sandbox.id))[0]?.detail).toMatchObject({
      to: 'failed',
      reason: 'crash_loop',
      crashes: 5,
    });
    const lost = await kit.seed({ state: 'active' });
    await kit.agentExit.handle(lost.id, 3, null, { ...report, crashes: 1, error: 'its workspace is gone' });
    expect((await kit.state(lost.id)).failureReason).toMatch(
      /^its agent exited with code 3 and could not be restarted: its workspace is gone; it is not restarted/,
    );
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
