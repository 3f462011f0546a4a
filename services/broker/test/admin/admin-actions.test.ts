// The forced actions: terminate really ends the sandbox at the provider, recover
// moves a sandbox stuck past its state's deadline and refuses earlier; a failing
// provider or a held sandbox lock leaves the row as it was.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { AdminActionResponse } from '@sbx/protocol';
import { sandboxLockKey } from '../../src/domain/lifecycle/sandbox-lock.js';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { liftOwnerShare } from '../support/owner-share.js';
import { adminKeys, errorCode, makeSandbox, type AdminKeys, type MadeSandbox } from './admin-kit.js';

describeEachBackend('admin sandbox actions', (backend) => {
  const broker = useBroker(backend, { loops: false });
  let keys: AdminKeys;
  let ownerKey: string;
  let made: MadeSandbox[];

  beforeAll(async () => {
    await liftOwnerShare(broker.repositories, broker.tenantId); // one owner makes six
    keys = await adminKeys(broker);
    ownerKey = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox'],
      principalType: 'user',
      principalId: `usr_${randomUUID()}`,
    });
    made = [];
    for (let i = 0; i < 6; i++) made.push(await makeSandbox(broker, ownerKey));
  });

  const post = (path: string) => request(broker.url).post(path).set(bearer(keys.admin)).send({});
  const stateOf = async (id: string) =>
    (await broker.database.prisma.sandbox.findUniqueOrThrow({ where: { id } })).state;

  it('terminates a sandbox: destroyed at the provider, bindings released, its session gone', async () => {
    const target = made[1] as MadeSandbox;
    const res = await post(`/admin/sandboxes/${target.sandboxId}/terminate`);
    expect(res.status).toBe(200);
    const body = AdminActionResponse.parse(res.body);
    expect([body.from, body.to, body.sandbox.state, body.sandbox.live_bindings]).toEqual([
      'active',
      'terminated',
      'terminated',
      0,
    ]);
    expect(broker.provider.calls('destroy')).toContain(target.sandboxId);
    const binding = await broker.database.prisma.sessionBinding.findUniqueOrThrow({
      where: { id: target.sessionId },
    });
    expect(binding.live).toBeNull();
    const session = await request(broker.url)
      .get(`/v1/sandbox/sessions/${target.sessionId}`)
      .set(bearer(ownerKey));
    expect([session.status, errorCode(session.body)]).toEqual([410, 'SESSION_EXPIRED']);
    const again = await post(`/admin/sandboxes/${target.sandboxId}/terminate`);
    expect([again.status, errorCode(again.body)]).toEqual([409, 'CONFLICT']);
    const row = await broker.database.prisma.auditEvent.findFirst({
      where: { sandboxId: target.sandboxId, action: 'sandbox.state' },
    });
    expect(row).toMatchObject({
      callerId: 'ops_admin',
      detail: { to: 'terminated', reason: 'admin_terminate' },
    });
  });

  it('recovers only past the deadline: active → idle, idle → suspended (provider stop)', async () => {
    const target = made[2] as MadeSandbox;
    const early = await post(`/admin/sandboxes/${target.sandboxId}/recover`);
    expect([early.status, errorCode(early.body)]).toEqual([409, 'CONFLICT']);
    expect(early.body.error.details.deadline).toEqual(expect.any(String));

    const past = new Date(Date.now() - 3_600_000);
    await broker.database.prisma.sandbox.update({
      where: { id: target.sandboxId },
      data: { leaseExpiresAt: past },
    });
    const idle = AdminActionResponse.parse((await post(`/admin/sandboxes/${target.sandboxId}/recover`)).body);
    expect([idle.from, idle.to]).toEqual(['active', 'idle']);
    const suspended = AdminActionResponse.parse(
      (await post(`/admin/sandboxes/${target.sandboxId}/recover`)).body,
    );
    expect([suspended.from, suspended.to]).toEqual(['idle', 'suspended']);
    expect(broker.provider.calls('stop')).toContain(target.sandboxId);
  });

  it('recovers a sandbox stuck in provisioning into failed, and one past its hard TTL into terminated', async () => {
    const stuck = made[3] as MadeSandbox;
    const old = new Date(Date.now() - 3_600_000);
    await broker.database.prisma.sandbox.update({
      where: { id: stuck.sandboxId },
      data: { state: 'provisioning', createdAt: old, lastHeartbeatAt: old },
    });
    const failed = AdminActionResponse.parse(
      (await post(`/admin/sandboxes/${stuck.sandboxId}/recover`)).body,
    );
    expect([failed.from, failed.to, failed.sandbox.failure_reason]).toEqual([
      'provisioning',
      'failed',
      expect.stringContaining('provisioning did not finish'),
    ]);
    const expired = made[4] as MadeSandbox;
    await broker.database.prisma.sandbox.update({
      where: { id: expired.sandboxId },
      data: { hardExpiresAt: old },
    });
    const ended = AdminActionResponse.parse(
      (await post(`/admin/sandboxes/${expired.sandboxId}/recover`)).body,
    );
    expect([ended.from, ended.to]).toEqual(['active', 'terminated']);
    expect(broker.provider.calls('destroy')).toContain(expired.sandboxId);
  });

  it('leaves the sandbox as it was when the provider fails (503) or another operation holds it (409)', async () => {
    const target = made[5] as MadeSandbox;
    broker.provider.failNext('destroy');
    const failed = await post(`/admin/sandboxes/${target.sandboxId}/terminate`);
    expect([failed.status, errorCode(failed.body)]).toEqual([503, 'PROVIDER_UNAVAILABLE']);
    expect(await stateOf(target.sandboxId)).toBe('active');

    const lock = await broker.coordination.acquireLock(sandboxLockKey(target.sandboxId), 10_000);
    const busy = await post(`/admin/sandboxes/${target.sandboxId}/terminate`);
    expect([busy.status, errorCode(busy.body)]).toEqual([409, 'CONFLICT']);
    await lock?.release();
    expect(await stateOf(target.sandboxId)).toBe('active');

    expect((await post(`/admin/sandboxes/${target.sandboxId}/terminate`)).status).toBe(200);
    expect(await stateOf(target.sandboxId)).toBe('terminated');
  });
});
