// The store's state machine is the protocol's: every move either repository
// makes (or refuses) on a real database agrees with SANDBOX_TRANSITIONS, and
// entering a state writes the same columns whichever repository does it.
import { expect, it } from '@jest/globals';
import { canTransition, isTerminalState, SANDBOX_STATES, type SandboxState } from '@sbx/protocol';
import { stateAuditEvent } from '../../src/domain/lifecycle/lifecycle-audit.js';
import { ReaperRepository, type StateChangeResult } from '../../src/store/reaper-repository.js';
import {
  ALLOWED_FROM,
  FINAL_STATES,
  RUNNING_STATES,
  SandboxRepository,
  STATE_STAMPS,
  type SandboxRecord,
} from '../../src/store/sandbox-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { newSandbox } from './fixtures.js';

const PAIRS = SANDBOX_STATES.flatMap((from) => SANDBOX_STATES.map((to) => ({ from, to })));
const LEGAL = PAIRS.filter(({ from, to }) => canTransition(from, to));
const AT = new Date('2030-02-03T04:05:06.007Z');

/** The columns a move may write: its effect, compared across repositories. */
function effect(row: SandboxRecord): Partial<SandboxRecord> {
  const { state, live, activeAt, idleAt, suspendedAt, terminatedAt, failedAt, httpBaseUrl, wsBaseUrl } = row;
  return { state, live, activeAt, idleAt, suspendedAt, terminatedAt, failedAt, httpBaseUrl, wsBaseUrl };
}

it('derives every store default from the protocol', () => {
  for (const to of SANDBOX_STATES) {
    expect([to, ALLOWED_FROM[to].toSorted()]).toEqual([
      to,
      SANDBOX_STATES.filter((from) => canTransition(from, to)).toSorted(),
    ]);
  }
  expect(FINAL_STATES.toSorted()).toEqual(SANDBOX_STATES.filter(isTerminalState).toSorted());
  // The agent-exit handler fails these: each must be live and allowed to fail.
  for (const state of RUNNING_STATES) expect([state, canTransition(state, 'failed')]).toEqual([state, true]);
  // Every state but the one a sandbox is created in records when it was entered.
  for (const state of SANDBOX_STATES)
    expect([state, STATE_STAMPS[state] === undefined]).toEqual([state, state === 'provisioning']);
});

describeEachBackend('the sandbox state machine', (backend) => {
  const db = useTestDatabase(backend);
  const sandboxes = () => new SandboxRepository(db().prisma);
  const reaper = () => new ReaperRepository(db().prisma);

  /** A sandbox put straight into `state`, with a dataplane, as any earlier path could have left it. */
  const seed = async (state: SandboxState): Promise<SandboxRecord> => {
    const input = newSandbox({ httpBaseUrl: 'http://127.0.0.1:7001', wsBaseUrl: 'ws://127.0.0.1:7001' });
    await sandboxes().create(input);
    return db().prisma.sandbox.update({
      where: { id: input.id },
      data: { state, live: isTerminalState(state) ? null : true },
    });
  };

  const viaReaper = (sandbox: SandboxRecord, to: SandboxState, from: readonly SandboxState[]) =>
    reaper().applyStateChange({
      sandboxId: sandbox.id,
      to,
      due: { states: from },
      at: AT,
      audit: (was, current) =>
        stateAuditEvent({
          sandbox: current,
          from: was,
          to,
          reason: 'hard_ttl',
          at: AT,
          actor: 'lease-reaper',
        }),
    });

  it('uses the states of the protocol in the database', async () => {
    const rows = await db().prisma.$queryRaw<{ state: string }[]>`
      SELECT unnest(enum_range(NULL::"SandboxState"))::text AS state`;
    expect(rows.map((row) => row.state).toSorted()).toEqual(SANDBOX_STATES.toSorted());
  });

  it('moves a sandbox by default exactly where the protocol allows', async () => {
    const outcomes = await Promise.all(
      PAIRS.map(async ({ from, to }) => {
        const sandbox = await seed(from);
        const moved = await sandboxes()
          .transition(sandbox.id, to)
          .then(() => 'moved')
          .catch((err: { code?: string }) => err.code);
        return `${from}>${to}: ${moved}`;
      }),
    );
    expect(outcomes).toEqual(
      PAIRS.map(({ from, to }) => `${from}>${to}: ${canTransition(from, to) ? 'moved' : 'CONFLICT'}`),
    );
  });

  it('refuses suspended → provisioning and cleans a failed sandbox up into terminated', async () => {
    const suspended = await seed('suspended');
    await expect(sandboxes().transition(suspended.id, 'provisioning')).rejects.toMatchObject({
      code: 'CONFLICT',
      details: { state: 'suspended', to: 'provisioning' },
    });
    await expect(
      sandboxes().transition(suspended.id, 'provisioning', { from: ['suspended'] }),
    ).rejects.toMatchObject({ code: 'INTERNAL' });
    expect((await sandboxes().findById(suspended.id, suspended))?.state).toBe('suspended');

    const failed = await sandboxes().transition((await seed('active')).id, 'failed', { at: new Date(0) });
    const terminated = await sandboxes().transition(failed.id, 'terminated', { at: AT });
    expect(terminated).toMatchObject({
      state: 'terminated',
      live: null,
      failedAt: new Date(0),
      terminatedAt: AT,
    });
  });

  it('lets the reaper apply only the moves the protocol allows', async () => {
    const outcomes = await Promise.all(
      PAIRS.map(async ({ from, to }) => {
        const result = await viaReaper(await seed(from), to, [from]).catch(
          (err: { code?: string }) => err.code,
        );
        return `${from}>${to}: ${typeof result === 'string' ? result : String(result?.applied)}`;
      }),
    );
    expect(outcomes).toEqual(
      PAIRS.map(({ from, to }) => `${from}>${to}: ${canTransition(from, to) ? 'true' : 'INTERNAL'}`),
    );
  });

  it('writes the same columns on entering a state through either repository', async () => {
    for (const { from, to } of LEGAL) {
      const [one, other] = [await seed(from), await seed(from)];
      const direct = await sandboxes().transition(one.id, to, { at: AT });
      const result: StateChangeResult = await viaReaper(other, to, [from]);
      expect(result).toMatchObject({ applied: true, from });
      const reaped = await db().prisma.sandbox.findUniqueOrThrow({ where: { id: other.id } });
      expect([`${from}>${to}`, effect(reaped)]).toEqual([`${from}>${to}`, effect(direct)]);
      const stamp = STATE_STAMPS[to]; // defined: no move enters provisioning
      expect(stamp === undefined ? undefined : direct[stamp]).toEqual(AT);
      expect(direct.live).toBe(isTerminalState(to) ? null : true);
      expect(direct.httpBaseUrl).toBe(to === 'suspended' ? null : 'http://127.0.0.1:7001');
    }
  });
});
