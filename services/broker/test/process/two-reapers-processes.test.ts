// Two broker processes on one Postgres and Redis both run their lease reaper every second
// (REAPER_INTERVAL_MS): each sandbox whose lease ran out moves to `idle` exactly once, with
// one audit row, whichever broker's reaper got to it (docs/lifecycle.md "Exactly once").
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { newDataDirOutsideTmp, removeDataDir } from '../providers/local-provider-kit.js';
import { backends, useTestDatabase } from '../support/test-database.js';
import {
  deploymentEnv,
  operatorKey,
  startBrokerProcess,
  until,
  type BrokerProcess,
} from './broker-process.js';

const postgres = backends.find((backend) => backend.name === 'postgres')!;
const LEASE_SECONDS = 3;

(postgres.available ? describe : describe.skip)('lease reapers of two broker processes', () => {
  const db = useTestDatabase(postgres);
  const dataDir = newDataDirOutsideTmp();
  const adminKey = operatorKey();
  const brokers: BrokerProcess[] = [];

  beforeAll(async () => {
    const env = {
      ...deploymentEnv({ databaseUrl: db().url, dataDir, adminKey, redis: true }),
      REAPER_INTERVAL_MS: '1000',
    };
    brokers.push(...(await Promise.all([startBrokerProcess(env), startBrokerProcess(env)])));
  });
  afterAll(async () => {
    await Promise.all(brokers.map((broker) => broker.kill('SIGTERM')));
    removeDataDir(dataDir);
  });

  const call = (broker: BrokerProcess, method: string, route: string, body: unknown) =>
    fetch(`${broker.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('moves each expired sandbox to idle once, with one audit row', async () => {
    const policy = await call(brokers[0]!, 'PUT', '/admin/tenants/default/policy', {
      idle_timeout_seconds: LEASE_SECONDS,
    });
    expect(policy.status).toBe(200);
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const res = await call(brokers[i % 2]!, 'POST', '/v1/sandbox/sessions', {
        thread_id: `thr_reap_${i}`,
        mode: 'ensure',
      });
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { sandbox: { id: string } }).sandbox.id);
    }

    await until(
      async () =>
        (await db().prisma.sandbox.count({ where: { id: { in: ids }, state: 'idle' } })) === ids.length,
      'every sandbox to go idle',
      200,
    );
    // The reapers raced on each sandbox when its lease ran out: one of them moved it.
    for (const sandboxId of ids) {
      const moves = await db().prisma.auditEvent.findMany({
        where: { sandboxId, action: 'sandbox.state', callerId: 'lease-reaper' },
      });
      expect(moves.map((move) => (move.detail as { to?: string } | null)?.to)).toEqual(['idle']);
    }
  });
});
