// Two broker processes on one Postgres and one Redis (docs/lifecycle.md, "Several
// brokers"), with the local provider on a shared data directory as on one host: the
// ensure race across them yields one sandbox, both relay its commands, the reconciler
// of one leaves the other's sandboxes alone while it lives, and takes them over
// (suspended, files kept, resumable) once it was SIGKILLed and its presence expired.
import { randomBytes } from 'node:crypto';
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

interface Session {
  readonly token: string;
  readonly sandbox: { readonly id: string; readonly http_base_url: string };
}

(postgres.available ? describe : describe.skip)('two broker processes on one Postgres and Redis', () => {
  const db = useTestDatabase(postgres);
  const dataDir = newDataDirOutsideTmp();
  const adminKey = operatorKey();
  const brokers: BrokerProcess[] = [];
  const thread = `thr_two_${randomBytes(4).toString('hex')}`;
  let sandboxId = '';

  beforeAll(async () => {
    const env = {
      ...deploymentEnv({ databaseUrl: db().url, dataDir, adminKey, redis: true }),
      RECONCILE_INTERVAL_MS: '1000',
      BROKER_PRESENCE_TTL_MS: '3000',
    };
    brokers.push(...(await Promise.all([startBrokerProcess(env), startBrokerProcess(env)])));
  });
  afterAll(async () => {
    await Promise.all(brokers.map((broker) => broker.kill('SIGTERM')));
    removeDataDir(dataDir);
  });

  const call = (broker: BrokerProcess, route: string, body: unknown) =>
    fetch(`${broker.url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const ensure = async (broker: BrokerProcess): Promise<Session> => {
    const res = await call(broker, '/v1/sandbox/sessions', { thread_id: thread, mode: 'ensure' });
    expect(res.status).toBe(200);
    return (await res.json()) as Session;
  };
  const run = async (broker: BrokerProcess, cmd: string): Promise<string> => {
    const res = await call(broker, `/v1/sandboxes/${sandboxId}/commands`, { cmd, timeout_ms: 10_000 });
    expect(res.status).toBe(200);
    return ((await res.json()) as { stdout: string }).stdout;
  };

  it('ensures on a new thread through both at once and gets one sandbox', async () => {
    const sessions = await Promise.all(Array.from({ length: 8 }, (_, i) => ensure(brokers[i % 2]!)));
    sandboxId = sessions[0]!.sandbox.id;
    expect(new Set(sessions.map((session) => session.sandbox.id))).toEqual(new Set([sandboxId]));
    expect(await db().prisma.sandbox.count({ where: { scopeId: thread } })).toBe(1);
  });

  it('relays commands to the sandbox through either broker', async () => {
    expect(await run(brokers[0]!, 'echo kept > note.txt && echo written')).toBe('written\n');
    expect(await run(brokers[1]!, 'cat note.txt')).toBe('kept\n');
  });

  it("leaves the live host's sandbox alone, takes it over after the host was SIGKILLed", async () => {
    const row = await db().prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId } });
    const hostIndex = brokers.findIndex((broker) => broker.output().includes(row.hostInstance!));
    const [host, survivor] = hostIndex === 0 ? [brokers[0]!, brokers[1]!] : [brokers[1]!, brokers[0]!];
    // A round of the survivor's reconciler saw the sandbox as another live instance's.
    await survivor.waitFor(/"foreign":[1-9]/);
    expect((await db().prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId } })).state).toBe('active');
    expect(await run(survivor, 'cat note.txt')).toBe('kept\n');

    await host.kill('SIGKILL');
    await until(
      async () =>
        (await db().prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId } })).state === 'suspended',
      'the survivor to record the dead host’s sandbox suspended',
      200,
    );
    const suspensions = await db().prisma.auditEvent.count({
      where: { sandboxId, action: 'sandbox.state', callerId: 'reconciler' },
    });
    expect(suspensions).toBe(1);

    const resumed = await ensure(survivor);
    expect(resumed.sandbox.id).toBe(sandboxId);
    expect(await run(survivor, 'cat note.txt')).toBe('kept\n');
  });
});
