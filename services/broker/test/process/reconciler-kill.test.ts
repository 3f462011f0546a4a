// `kill -9` of a broker in the middle of provisioning (docs/lifecycle.md, "Reconciler"):
// a real broker process on Postgres with the local provider is SIGKILLed while the agent
// of a new sandbox is starting (held in place with SIGSTOP so the kill lands mid-way,
// then let go, as the kernel would have let it run). The broker started next on the same
// database and data directory must leave nothing behind: the row failed with a reason,
// no agent or user process, no workspace or state directory, and the thread's next
// ensure gets a new sandbox that works.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ABANDONED } from '../../src/domain/lifecycle/reconcile-sandbox.js';
import { newDataDirOutsideTmp, removeDataDir } from '../providers/local-provider-kit.js';
import { backends, useTestDatabase } from '../support/test-database.js';
import {
  deploymentEnv,
  descendantsOf,
  environmentOf,
  isRunning,
  operatorKey,
  processesWorkingIn,
  startBrokerProcess,
  until,
  type BrokerProcess,
} from './broker-process.js';

const postgres = backends.find((backend) => backend.name === 'postgres')!;

(postgres.available ? describe : describe.skip)('broker killed with SIGKILL mid-provisioning', () => {
  const db = useTestDatabase(postgres);
  const dataDir = newDataDirOutsideTmp();
  const adminKey = operatorKey();
  const running: BrokerProcess[] = [];
  let sharedEnv: Record<string, string> | undefined;
  const start = async (): Promise<BrokerProcess> => {
    sharedEnv ??= deploymentEnv({ databaseUrl: db().url, dataDir, adminKey });
    const broker = await startBrokerProcess(sharedEnv);
    running.push(broker);
    return broker;
  };
  afterAll(async () => {
    await Promise.all(running.map((broker) => broker.kill('SIGTERM')));
    removeDataDir(dataDir);
  });

  const ensure = (broker: BrokerProcess, thread: string) =>
    fetch(`${broker.url}/v1/sandbox/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ thread_id: thread, mode: 'ensure' }),
    });

  it('leaves no agent, process, file or live row behind once the next broker has started', async () => {
    const thread = `thr_kill_${randomBytes(4).toString('hex')}`;
    const first = await start();
    const firstPid = first.child.pid!;
    const answered = ensure(first, thread).then(
      (res) => res.status,
      () => 'connection lost',
    );

    // The sandbox's agent and the bubblewrap that starts it carry SANDBOX_ID: every one is held
    // before it answers, until a scan after the stops finds none running (holding bubblewrap
    // alone let an agent it had already started serve, on a loaded machine).
    const held = new Set<number>();
    let sandboxId: string | undefined;
    await until(
      () => {
        let stoppedNow = false;
        for (const pid of descendantsOf(firstPid)) {
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
    const row = await db().prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId! } });
    expect(row.state).toBe('provisioning');

    await first.kill('SIGKILL');
    expect(await answered).toBe('connection lost'); // the caller's connection died with the broker
    for (const pid of held) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Ended with its broker (bubblewrap's --die-with-parent): nothing to continue.
      }
    }
    // Its stdin (held by the dead broker) is closed: the agent ends itself.
    await until(() => [...held].every((pid) => !isRunning(pid)), 'the orphaned agent to end');

    await start();

    const failed = await db().prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId! } });
    expect(failed.state).toBe('failed');
    expect(failed.failureReason).toBe(ABANDONED);
    const workspace = path.join(dataDir, 'workspaces', sandboxId!);
    expect(existsSync(workspace)).toBe(false);
    expect(existsSync(path.join(dataDir, 'sandboxes', sandboxId!))).toBe(false);
    expect(processesWorkingIn(workspace)).toEqual([]);

    // The scope is free again: the thread gets a new sandbox, and it runs code.
    const second = running.at(-1)!;
    const res = await ensure(second, thread);
    expect(res.status).toBe(200);
    const session = (await res.json()) as { token: string; sandbox: { id: string; http_base_url: string } };
    expect(session.sandbox.id).not.toBe(sandboxId);
    const exec = await fetch(`${session.sandbox.http_base_url}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd: 'echo alive', timeout_ms: 10_000 }),
    });
    expect(((await exec.json()) as { stdout: string }).stdout).toBe('alive\n');
  });
});
