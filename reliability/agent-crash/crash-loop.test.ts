// An agent that keeps dying is given up on, clearly, with its files kept: after
// `maxCrashes` crashes within the window the sandbox is `failed` with a reason that says
// so; its workspace is swept and unmounted but kept (hashed on its image); the session
// answers (GET, heartbeat) name the failure; the thread's next ensure is refused (409,
// naming the sandbox, its state and how to start over) rather than handed a new, empty
// sandbox; deleting the failed sandbox is how its owner starts over.
// Bounded: one crash loop of 3; long (SBX_RELIABILITY=long): a loop of 6.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmdirSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { ConflictError, SbxClientError, type BrokerClient } from '../../packages/client/src/index.js';
import { processesOfSandbox } from '../../services/broker/test/providers/local-provider-kit.js';
import { bearer, ALL_CALLER_SCOPES } from '../../services/broker/test/support/broker-harness.js';
import { until } from '../../services/broker/test/support/until.js';
import {
  clientOf,
  describeOnPostgres,
  hostWorkspace,
  killAgent,
  LONG,
  mountsUnder,
  restarted,
  RIDE_OUT_RESTARTS,
  sessionOn,
  stateOf,
  treeHashes,
  useCrashBroker,
} from './crash-kit.js';

const CRASHES = LONG ? 6 : 3;

/** The files of a workspace image, hashed through a read-only mount of its own. */
function imageHashes(image: string): Map<string, string> {
  const mountPoint = mkdtempSync(path.join(tmpdir(), 'sbx-crash-image-'));
  execFileSync('mount', ['-o', 'loop,ro,noload', image, mountPoint]);
  try {
    return treeHashes(mountPoint);
  } finally {
    execFileSync('umount', [mountPoint]);
    rmdirSync(mountPoint);
  }
}

async function rejection(promise: Promise<unknown>): Promise<SbxClientError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof SbxClientError) return err;
    throw err;
  }
  throw new Error('it should have been refused');
}

describeOnPostgres('agent crash loop: failed, files kept, said so', () => {
  const broker = useCrashBroker({ maxCrashes: CRASHES, backoffMs: 100, maxBackoffMs: 400 });
  let client: BrokerClient;

  beforeAll(async () => {
    client = await clientOf(broker);
  });

  it(`fails the sandbox after ${CRASHES} crashes and never gives its thread an empty one unasked`, async () => {
    const thread = `thr_loop_${randomUUID()}`;
    const session = await sessionOn(client, thread);
    const sandboxId = session.response.sandbox.id;
    const sandbox = session.sandbox({ retry: RIDE_OUT_RESTARTS });
    await sandbox.files.write('work/notes.txt', 'kept through a crash loop\n');
    await sandbox.files.write('work/blob.bin', randomBytes(1 << 20));
    const workspace = hostWorkspace(broker.dataDir(), sandboxId);
    const before = treeHashes(workspace);
    const processes = processesOfSandbox(broker.dataDir(), sandboxId);
    expect(processes.length).toBeGreaterThan(0);

    for (let crash = 1; crash < CRASHES; crash++)
      await restarted(broker, sandboxId, killAgent(broker, sandboxId));
    killAgent(broker, sandboxId);
    await until(
      async () => (await stateOf(broker, sandboxId)).state === 'failed',
      'the crash loop to fail it',
    );

    const row = await stateOf(broker, sandboxId);
    expect(row.live).toBeNull();
    expect(row.failureReason).toMatch(
      new RegExp(
        `its agent crashed ${CRASHES} times within 600 s \\(the last time it was killed by SIGKILL\\)`,
      ),
    );
    expect(row.failureReason).toMatch(/not restarted again, and its workspace is kept/);
    const events = await broker.repositories.audit.listBySandbox(sandboxId);
    expect(events.filter((e) => e.action === 'sandbox.agent_restarted')).toHaveLength(CRASHES - 1);
    expect(events.find((e) => e.action === 'sandbox.state')?.detail).toMatchObject({
      from: 'active',
      to: 'failed',
      reason: 'crash_loop',
      crashes: CRASHES,
    });

    // Swept and unmounted, not deleted: the files are on its image, byte for byte.
    await until(() => mountsUnder(broker.dataDir()).length === 0, 'its workspace to be unmounted');
    await until(() => processesOfSandbox(broker.dataDir(), sandboxId).length === 0, 'its processes to end');
    expect(await broker.provider.status(sandboxId)).toBe('failed');
    const image = path.join(broker.dataDir(), 'sandboxes', sandboxId, 'workspace.img');
    expect(existsSync(image)).toBe(true);
    expect(imageHashes(image)).toEqual(before);

    // The session answers say what happened.
    const inspected = await rejection(client.inspect(session.sessionId));
    expect(inspected.code).toBe('SESSION_EXPIRED');
    expect(inspected.message).toMatch(/was failed by the broker \(crash_loop\): its agent crashed/);
    expect(inspected.details).toMatchObject({ sandbox_state: 'failed', reason: 'crash_loop' });
    const beat = await rejection(session.heartbeat());
    expect(beat.details?.['failure_reason']).toBe(row.failureReason);

    // No new sandbox for the thread unasked: ensure names the failed one and the way out.
    const refused = await rejection(sessionOn(client, thread));
    expect(refused).toBeInstanceOf(ConflictError);
    expect(refused.message).toContain(`sandbox ${sandboxId} is failed (its agent crashed`);
    expect(refused.message).toContain(`DELETE /v1/sandboxes/${sandboxId}`);
    expect(refused.details).toMatchObject({ sandbox_id: sandboxId, state: 'failed', reason: 'crash_loop' });
    expect(await broker.database.prisma.sandbox.count({ where: { scopeId: thread } })).toBe(1);

    // Deleting it is asking for a new one: its workspace goes, the thread gets an empty sandbox.
    const key = await broker.apiKey({ scopes: ALL_CALLER_SCOPES });
    const deleted = await request(broker.url).delete(`/v1/sandboxes/${sandboxId}`).set(bearer(key));
    expect(deleted.status).toBe(204);
    expect((await stateOf(broker, sandboxId)).state).toBe('terminated');
    expect(existsSync(image)).toBe(false);
    const fresh = await sessionOn(client, thread);
    expect(fresh.response.sandbox.id).not.toBe(sandboxId);
    const listing = await fresh.sandbox().files.list('.');
    expect(listing.entries).toEqual([]);
    await fresh.release();
  }, 600_000);
});
