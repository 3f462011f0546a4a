// `kill -9` of one of two broker replicas (sharing the suite's own Postgres and Redis) while
// it provisions a sandbox for a request carrying an Idempotency-Key: the new sandbox's agent
// is held with SIGSTOP so that the kill lands mid-way, then let go, as the kernel would have
// let it run. The other replica serves on throughout; the client's retry with the same key
// there runs the request once the dead replica's presence has expired (instead of a 409 for
// the claim's two minutes), and later retries replay that first answer. Once a replica is
// started in the dead one's place nothing of the killed request is left: no agent, process,
// mount, cgroup or state directory of the abandoned sandbox, and no row in a transitional
// state. Long form: more kill rounds.
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { ABANDONED } from '../../services/broker/src/domain/lifecycle/reconcile-sandbox.js';
import {
  descendantsOf,
  environmentOf,
  isRunning,
  processesWorkingIn,
  until,
  type BrokerProcess,
} from '../../services/broker/test/process/broker-process.js';
import { field, LONG, text, useDeployment, type Answer, type Deployment } from './fault-kit.js';

const ROUNDS = LONG ? 5 : 1;
/** The retryable refusals of a retry while the survivor takes over (see below). */
const RECOVERING = [409, 423, 503];

/** Cgroup directories (below the v2 root, a few levels deep) whose name holds `id`. */
function cgroupsNaming(id: string, dir = '/sys/fs/cgroup', depth = 4): string[] {
  if (depth === 0) return [];
  let entries: string[];
  try {
    entries = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const full = path.join(dir, name);
    return name.includes(id) ? [full] : cgroupsNaming(id, full, depth - 1);
  });
}

/** Mount points whose path or source names `id`. */
function mountsNaming(id: string): string[] {
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .filter((line) => line.includes(id));
}

/**
 * Holds the new sandbox's agent before it can serve: stops every process below `broker` that
 * carries a SANDBOX_ID (bubblewrap, then the agent it starts), until a scan after the stops
 * finds none still running. Stopping only the first one found stopped bubblewrap alone when
 * the scan came late (a loaded machine): the agent it had started served, and the request
 * this test kills mid-provision was answered 200.
 */
async function holdNewAgent(broker: BrokerProcess): Promise<{ heldPids: number[]; sandboxId: string }> {
  const held = new Set<number>();
  let sandboxId: string | undefined;
  await until(
    () => {
      let stoppedNow = false;
      for (const pid of descendantsOf(broker.child.pid!)) {
        const id = environmentOf(pid, 'SANDBOX_ID');
        if (id === undefined || held.has(pid)) continue;
        process.kill(pid, 'SIGSTOP');
        held.add(pid);
        sandboxId = id;
        stoppedNow = true;
      }
      return held.size > 0 && !stoppedNow;
    },
    'the agent of the new sandbox',
    2,
  );
  return { heldPids: [...held], sandboxId: sandboxId! };
}

describe('kill -9 of a broker replica mid-provision, with another replica serving', () => {
  const deployment = useDeployment({
    redis: true,
    env: {
      RECONCILE_INTERVAL_MS: '1000',
      REAPER_INTERVAL_MS: '1000',
      BROKER_PRESENCE_TTL_MS: '3000',
    },
  });

  const ensure = (d: Deployment, broker: BrokerProcess, thread: string, key: string): Promise<Answer> =>
    d.call(
      broker,
      'POST',
      '/v1/sandbox/sessions',
      { thread_id: thread, mode: 'ensure' },
      { 'idempotency-key': key },
    );

  async function runsCode(answer: Answer): Promise<string> {
    const res = await fetch(`${text(answer, 'sandbox', 'http_base_url')}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${text(answer, 'token')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd: 'echo alive', timeout_ms: 30_000 }),
    });
    return ((await res.json()) as { stdout?: string }).stdout ?? '';
  }

  it('serves on, runs the retry once, replays it, and leaves nothing of the killed request', async () => {
    const d = deployment();
    for (let round = 0; round < ROUNDS; round += 1) {
      const [doomed, survivor] = d.brokers.filter((broker) => isRunning(broker.child.pid!));
      const thread = `thr_kill_${randomBytes(4).toString('hex')}`;
      const key = randomUUID();
      const lost = ensure(d, doomed!, thread, key).then(
        (answer) => answer.status,
        () => 'connection lost',
      );
      const { heldPids, sandboxId } = await holdNewAgent(doomed!);
      await doomed!.kill('SIGKILL');
      expect(await lost).toBe('connection lost');
      for (const pid of heldPids) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // Ended with its broker (bubblewrap's --die-with-parent): nothing to continue.
        }
      }

      // The other replica serves on, at once.
      expect((await d.call(survivor!, 'GET', '/v1/whoami')).status).toBe(200);

      // The client's retry, same key, on the survivor: retryable refusals while the killed
      // replica may still be alive (409: its claim is in progress), while its sandbox is
      // still provisioning (423, until the reconciler fails it; 503 to a retry that waited for
      // it), then it runs.
      let retried: Answer | undefined;
      const refusals: { status: number; retryable: unknown }[] = [];
      await until(
        async () => {
          retried = await ensure(d, survivor!, thread, key);
          if (retried.status === 200) return true;
          refusals.push({ status: retried.status, retryable: field(retried.body, 'error', 'retryable') });
          return false;
        },
        'the retry to run on the surviving replica',
        250,
      ).catch(async (err: unknown) => {
        const row = await d.db.prisma.sandbox.findUnique({ where: { id: sandboxId } });
        throw new Error(
          `${String(err)}; last answer ${retried?.text}; abandoned row ${JSON.stringify(row)}; survivor:\n${survivor!.output().slice(-4000)}`,
        );
      });
      expect(refusals.filter((r) => !RECOVERING.includes(r.status) || r.retryable !== true)).toEqual([]);
      expect(retried!.headers.get('idempotent-replayed')).toBeNull();
      expect(text(retried!, 'sandbox', 'id')).not.toBe(sandboxId);
      expect(await runsCode(retried!)).toBe('alive\n');
      const replayed = await ensure(d, survivor!, thread, key);
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      expect(replayed.body).toEqual(retried!.body);

      // A replica in the dead one's place; the abandoned sandbox leaves nothing behind.
      await d.start();
      await until(
        async () =>
          (await d.db.prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId } })).state === 'failed',
        'the abandoned sandbox to be failed',
        100,
      );
      const abandoned = await d.db.prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId } });
      expect(abandoned.failureReason).toBe(ABANDONED);
      await until(() => heldPids.every((pid) => !isRunning(pid)), 'the orphaned agent to end', 50);
      const workspace = path.join(d.dataDir, 'workspaces', sandboxId);
      await until(() => !existsSync(workspace), 'the abandoned workspace to be removed', 100);
      expect(existsSync(path.join(d.dataDir, 'sandboxes', sandboxId))).toBe(false);
      expect(processesWorkingIn(workspace)).toEqual([]);
      expect(mountsNaming(sandboxId)).toEqual([]);
      expect(cgroupsNaming(sandboxId)).toEqual([]);
      // Provisioning is the one transitional state: nothing is left in it.
      expect(await d.db.prisma.sandbox.count({ where: { state: 'provisioning' } })).toBe(0);
    }
  }, 600_000);
});
