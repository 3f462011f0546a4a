import { beforeAll, expect, it } from '@jest/globals';
import {
  SessionBindingRepository,
  type NewSessionBinding,
} from '../../src/store/session-binding-repository.js';
import { SandboxRepository } from '../../src/store/sandbox-repository.js';
import { SessionTransactions } from '../../src/store/session-transactions.js';
import { IdempotencyRepository } from '../../src/store/idempotency-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { newSandbox, uid } from './fixtures.js';

describeEachBackend('SessionTransactions and IdempotencyRepository', (backend) => {
  const db = useTestDatabase(backend);
  let tx: SessionTransactions;
  let sandboxes: SandboxRepository;
  let bindings: SessionBindingRepository;
  beforeAll(() => {
    tx = new SessionTransactions(db().prisma);
    sandboxes = new SandboxRepository(db().prisma);
    bindings = new SessionBindingRepository(db().prisma);
  });

  const bindingFor = (sandbox: ReturnType<typeof newSandbox>, actorId = uid('actor')) =>
    ({
      id: uid('ssn'),
      tenantId: sandbox.tenantId,
      ownerId: sandbox.ownerId,
      scopeType: sandbox.scopeType,
      scopeId: sandbox.scopeId,
      actorType: 'human',
      actorId,
      capabilities: ['fs:rw'],
    }) satisfies Omit<NewSessionBinding, 'sandboxId'>;

  it('creates a sandbox with its first binding, once per owner scope', async () => {
    const input = newSandbox();
    const { sandbox, binding } = await tx.createSandboxWithBinding(input, bindingFor(input));
    expect(binding.sandboxId).toBe(sandbox.id);
    const again = newSandbox({ tenantId: input.tenantId, ownerId: input.ownerId, scopeId: input.scopeId });
    await expect(tx.createSandboxWithBinding(again, bindingFor(again))).rejects.toMatchObject({
      code: 'CONFLICT',
      details: { constraint: 'sandbox_one_live_per_scope' },
    });
    // Nothing of the losing attempt remains.
    expect(await db().prisma.sandbox.count({ where: { id: again.id } })).toBe(0);
  });

  it('terminates a sandbox when its last binding is released, not before', async () => {
    const input = newSandbox();
    const first = await tx.createSandboxWithBinding(input, bindingFor(input));
    const second = await tx.attachBinding({ ...bindingFor(input), sandboxId: first.sandbox.id });
    expect(second).not.toBeNull();
    const one = await tx.releaseBinding(first.binding.id);
    expect(one).toMatchObject({ releasedNow: true, terminated: null });
    const again = await tx.releaseBinding(first.binding.id);
    expect(again).toMatchObject({ releasedNow: false, terminated: null });
    const last = await tx.releaseBinding(second!.id);
    expect(last?.terminated).toMatchObject({ id: first.sandbox.id, state: 'terminated', live: null });
    // A terminated sandbox takes no new binding.
    expect(await tx.attachBinding({ ...bindingFor(input), sandboxId: first.sandbox.id })).toBeNull();
    expect(await tx.releaseBinding(uid('missing'))).toBeNull();
  });

  it('fails a sandbox and releases its bindings in one step', async () => {
    const input = newSandbox();
    const { sandbox, binding } = await tx.createSandboxWithBinding(input, bindingFor(input));
    const failed = await tx.failSandbox(sandbox.id, 'boom');
    expect(failed).toMatchObject({ state: 'failed', live: null, failureReason: 'boom' });
    expect((await bindings.findByIdAnyOwner(binding.id))?.live).toBeNull();
    expect(await tx.failSandbox(sandbox.id, 'again')).toBeNull();
    expect(await sandboxes.findLiveByScope(input)).toBeNull();
  });

  it('lets one claim of an idempotency key win, stores its answer, frees it on remove', async () => {
    const repo = new IdempotencyRepository(db().prisma);
    const ref = { tenantId: uid('tenant'), principalId: uid('p'), key: uid('key') };
    const expiresAt = new Date(Date.now() + 60_000);
    const claims = await Promise.all(
      Array.from({ length: 5 }, () => repo.claim({ ...ref, requestHash: 'h', expiresAt })),
    );
    expect(claims.filter((claim) => claim.claimed)).toHaveLength(1);
    await repo.complete(ref, 200, new Uint8Array([1, 2, 3]), expiresAt);
    expect(await repo.find(ref)).toMatchObject({ status: 200, requestHash: 'h' });
    expect(await repo.remove(ref, { expiredBefore: new Date() })).toBe(false);
    expect(await repo.remove(ref)).toBe(true);
    expect((await repo.claim({ ...ref, requestHash: 'h2', expiresAt })).claimed).toBe(true);
  });
});
