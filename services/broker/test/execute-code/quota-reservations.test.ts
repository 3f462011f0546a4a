// execute_code's caps with units taken ahead for an agent's next calls
// (docs/execute-code.md "Quotas"), on the real counters in Postgres: the next call needs
// no database round trip, caps stay exact under concurrency, a changed cap or window
// never uses a unit taken under the old one, and held units go back when idle or at
// shutdown.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { QuotaReservations } from '../../src/domain/execute-code/quota-reservations.js';
import { quotaWindows, type Caps } from '../../src/domain/execute-code/quota-windows.js';
import {
  ExecuteCodeQuotaRepository,
  type QuotaCounter,
} from '../../src/store/execute-code-quota-repository.js';
import { captureLogger } from '../support/broker-harness.js';
import { backends, useTestDatabase } from '../support/test-database.js';
import { until } from '../support/until.js';

const postgres = backends.find((b) => b.name === 'postgres')!;
const HOUR = 3_600_000;

(postgres.available ? describe : describe.skip)('execute_code quota taken ahead [postgres]', () => {
  const db = useTestDatabase(postgres);
  const repository = () => new ExecuteCodeQuotaRepository(db().prisma);
  /** The repository, counting the takes that reach the database. */
  const counted = () => {
    const store = repository();
    const calls = { take: 0 };
    return {
      calls,
      take: (c: readonly [QuotaCounter, QuotaCounter], units?: number) => {
        calls.take += 1;
        return store.take(c, units);
      },
      giveBack: (c: readonly [QuotaCounter, QuotaCounter], units?: number) => store.giveBack(c, units),
    };
  };
  const tenantOf = () => `tenant_${randomUUID()}`;
  const counts = async (tenant: string, caps: Caps, at = Date.now(), agent = 'a') => {
    const windows = quotaWindows(tenant, agent, caps, at);
    return Promise.all(windows.map((w) => repository().count(w)));
  };
  const settle = (tenant: string, caps: Caps, expected: number[], at = Date.now()) =>
    until(
      async () => JSON.stringify(await counts(tenant, caps, at)) === JSON.stringify(expected),
      `counters at ${expected.join(', ')}`,
    );

  it("serves an agent's next calls from units taken ahead, without asking the database", async () => {
    const store = counted();
    const gate = new QuotaReservations(store, captureLogger([]));
    const tenant = tenantOf();
    const caps = { tenantDaily: 100, agentHourly: 100 };
    const take = () => gate.take(quotaWindows(tenant, 'a', caps, Date.now()));
    expect((await take()).taken).toBe(true);
    // One call made, four units held for the next ones.
    await settle(tenant, caps, [5, 5]);
    const before = store.calls.take;
    for (let i = 0; i < 3; i++) expect((await take()).taken).toBe(true);
    expect(store.calls.take).toBe(before);
    // The fourth held unit goes to the next call, and four more are taken behind it.
    expect((await take()).taken).toBe(true);
    await settle(tenant, caps, [9, 9]);
    await gate.drain();
    expect(await counts(tenant, caps)).toEqual([5, 5]);
  });

  it('takes exactly the cap from 50 concurrent calls, and 10 more from one agent after another', async () => {
    const gate = new QuotaReservations(repository(), captureLogger([]));
    const tenant = tenantOf();
    const caps = { tenantDaily: 1000, agentHourly: 10 };
    const takes = await Promise.all(
      Array.from({ length: 50 }, () => gate.take(quotaWindows(tenant, 'a', caps, Date.now()))),
    );
    expect(takes.filter((t) => t.taken)).toHaveLength(10);
    const other = { tenantDaily: 12, agentHourly: 100 };
    const sequential: boolean[] = [];
    for (let i = 0; i < 4; i++)
      sequential.push((await gate.take(quotaWindows(tenant, 'b', other, Date.now()))).taken);
    // The tenant's day now has 12: two more calls of agent b fit, whatever b held ahead.
    expect(sequential).toEqual([true, true, false, false]);
    expect((await counts(tenant, other, Date.now(), 'b'))[0]).toBe(12);
  });

  it('never uses a held unit once the cap changed: the kill switch refuses the next call', async () => {
    const gate = new QuotaReservations(repository(), captureLogger([]));
    const tenant = tenantOf();
    const open = { tenantDaily: 100, agentHourly: 100 };
    expect((await gate.take(quotaWindows(tenant, 'a', open, Date.now()))).taken).toBe(true);
    await settle(tenant, open, [5, 5]);
    const killed = { tenantDaily: 0, agentHourly: 100 };
    expect(await gate.take(quotaWindows(tenant, 'a', killed, Date.now()))).toEqual({
      taken: false,
      dimension: 'tenant_daily',
    });
    // The held units went back: one call made, one counted.
    await settle(tenant, open, [1, 1]);
  });

  it('gives a held unit back to its window when the next call falls in a new window', async () => {
    const gate = new QuotaReservations(repository(), captureLogger([]));
    const tenant = tenantOf();
    const caps = { tenantDaily: 100, agentHourly: 100 };
    const nine = Date.UTC(2026, 10, 27, 9, 59, 59);
    expect((await gate.take(quotaWindows(tenant, 'a', caps, nine))).taken).toBe(true);
    await settle(tenant, caps, [5, 5], nine);
    expect((await gate.take(quotaWindows(tenant, 'a', caps, nine + HOUR))).taken).toBe(true);
    // The day: 2 calls and 4 held; the old hour: its 1 call; the new hour: 1 call and 4 held.
    await settle(tenant, caps, [6, 1], nine);
    await settle(tenant, caps, [6, 5], nine + HOUR);
    await gate.drain();
  });

  it('gives units back when their agent makes no call for a while', async () => {
    const gate = new QuotaReservations(repository(), captureLogger([]), 50);
    const tenant = tenantOf();
    const caps = { tenantDaily: 100, agentHourly: 100 };
    expect((await gate.take(quotaWindows(tenant, 'a', caps, Date.now()))).taken).toBe(true);
    await settle(tenant, caps, [1, 1]);
  });
});
