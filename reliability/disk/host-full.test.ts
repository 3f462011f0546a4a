// Issue 28, faults, bullet 4 (a full host disk): the broker's data directory — its embedded
// database (PGlite's files) and the local provider's workspace images — lives on a small
// disk of the suite's own (small-disk.ts; the real host disk is never filled), which files
// the test writes fill up: blocks as an unprivileged user, blocks as root (to the last one),
// inodes. What a user sees at each door (docs/operations.md, "A full disk"):
//  - a new sandbox the disk cannot hold: 507 INSUFFICIENT_STORAGE naming the disk (finding
//    D1: it was a retryable 503, whether the budget refused it or the image's files could
//    not be made);
//  - the broker's database out of space: 507 naming the database, no stack, and the database
//    answers reads, writes again once space is back and reopens with every row (finding D2:
//    it was 500 INTERNAL);
//  - a running sandbox with preallocated images (`preallocateWorkspaces`): its writes land
//    and stay, its workspace writable, whatever fills the host (finding D3: a sparse image
//    lost writes a process had fsynced and turned read-only; sparse stays the default, see
//    services/broker/src/providers/workspace-volumes.ts); an image the host cannot allocate
//    whole is refused with 507 before it is mounted.
//
// Bounded: one round each. Long (SBX_RELIABILITY=long): ten times the broker writes, and
// the last-block round five times.
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { InsufficientStorageError } from '../../packages/client/src/index.js';
import { rejectionOf } from '../../packages/client/test/wait-for.js';
import { detectWorkspaceVolumes } from '../../services/broker/src/providers/workspace-volumes.js';
import { openDatabase } from '../../services/broker/src/store/database.js';
import {
  codeOf,
  createApiKey,
  LONG,
  MIB,
  openWorkspace,
  randomFile,
  sandboxDirs,
  sha256,
  startDiskWorld,
  UNPRIVILEGED_UID,
  type DiskWorld,
  type RawAnswer,
  type Workspace,
} from './disk-kit.js';
import { canMakeSmallDisk } from './small-disk.js';

const withDisk = canMakeSmallDisk ? describe : describe.skip;

withDisk('a full host disk (real broker, PGlite and workspace volumes on a small disk)', () => {
  let world: DiskWorld;
  let ws: Workspace;
  let keys = 0;
  /** API keys the broker answered 201 for: every one must be in the database when it reopens. */
  let created = 0;

  beforeAll(async () => {
    // One inode per 16 KiB: few enough to use up in a second.
    world = await startDiskWorld({ preallocate: true, bytesPerInode: 16 * 1024 });
    ws = await openWorkspace(world, 'thr_host_full');
  }, 180_000);

  afterEach(async () => {
    await world.disk.free();
  });

  afterAll(async () => {
    await world?.close();
  }, 120_000);

  async function newKey(): Promise<RawAnswer> {
    const answer = await createApiKey(world, ++keys);
    if (answer.status === 201) created++;
    return answer;
  }

  /** Creates keys until the broker refuses one (the disk is full); the refusal. */
  async function keysUntilRefused(): Promise<RawAnswer> {
    for (let n = 0; n < 5_000; n++) {
      const answer = await newKey();
      if (answer.status !== 201) return answer;
    }
    throw new Error('5000 keys fitted on a full disk');
  }

  /** A new sandbox for `threadId`, refused: the SDK's error. */
  async function refusedSandbox(threadId: string): Promise<Error> {
    const before = sandboxDirs(world);
    const refused = await rejectionOf(openWorkspace(world, threadId), 'a new sandbox', 60_000);
    // Nothing of it is left on the disk.
    expect(sandboxDirs(world)).toEqual(before);
    return refused;
  }

  it('filled by an unprivileged writer: the broker (root) keeps writing, uploads land, a new sandbox gets 507', async () => {
    await world.disk.fillUp({ uid: UNPRIVILEGED_UID });
    // Full for users; root's reserved blocks (ext4's 5 %) are left, as on a real host.
    expect(await world.disk.canWrite(MIB, UNPRIVILEGED_UID)).toBe(false);
    expect(await world.disk.canWrite(MIB)).toBe(true);
    for (let n = 0; n < (LONG ? 500 : 50); n++) expect((await newKey()).status).toBe(201);
    await ws.session.heartbeat();
    await world.broker.client.inspect(ws.session.sessionId);
    const next = randomFile(4 * MIB);
    await ws.sandbox.files.write('reserve.bin', next);
    expect(sha256(await ws.sandbox.files.read('reserve.bin'))).toBe(sha256(next));

    // Finding D1: the budget's refusal reached the caller as a retryable 503.
    const refused = await refusedSandbox('thr_no_room');
    expect(refused).toBeInstanceOf(InsufficientStorageError);
    expect(refused).toMatchObject({ httpStatus: 507, retryable: false });
    expect(refused.message).toMatch(/not enough disk for a workspace of 67108864 bytes/);
    // Room again: the same thread gets its sandbox.
    await world.disk.free();
    await (await openWorkspace(world, 'thr_no_room')).sandbox.files.write('hello.txt', 'hello');
  }, 180_000);

  it('out of inodes: a new sandbox gets 507 naming the host disk, then works once they are back', async () => {
    expect(await world.disk.useUpInodes(UNPRIVILEGED_UID)).toBeGreaterThan(1000);
    expect(world.disk.space().inodes).toBe(0);
    // Finding D1 too: blocks are free, so the budget admits it; making its files fails (ENOSPC).
    const refused = await refusedSandbox('thr_no_inodes');
    expect(refused).toBeInstanceOf(InsufficientStorageError);
    expect(refused).toMatchObject({ httpStatus: 507, retryable: false });
    expect(refused.message).toMatch(/no space left on the sandbox host's disk/);
    await world.disk.free();
    await (await openWorkspace(world, 'thr_no_inodes')).sandbox.files.write('hello.txt', 'hello');
  }, 180_000);

  it("filled to its last block: the database answers 507 and recovers; a sandbox's writes stay", async () => {
    for (let round = 1; round <= (LONG ? 5 : 1); round++) {
      await world.disk.fillUp();
      expect(await world.disk.canWrite(64 * 1024)).toBe(false);

      // Finding D2: the database out of space was 500 INTERNAL.
      const refusal = await keysUntilRefused();
      expect([refusal.status, codeOf(refusal)]).toEqual([507, 'INSUFFICIENT_STORAGE']);
      expect(refusal.body).toMatchObject({
        error: { retryable: false, message: expect.stringMatching(/database is out of disk space$/) },
      });
      expect(JSON.stringify(refusal.body)).not.toMatch(/\bat .+:\d+:\d+/);
      expect((await world.broker.client.inspect(ws.session.sessionId)).binding.state).toBe('active');

      // Finding D3: a process's fsynced bytes are on the image (read past every cache) and the
      // workspace stays writable. A sparse image had no blocks left to take: fsync failed, ext4
      // aborted its journal and the workspace turned read-only.
      const wrote = await ws.sandbox.exec.run({
        cmd: 'head -c 3000000 /dev/urandom > kept.bin && sync kept.bin && sha256sum < kept.bin',
      });
      expect([wrote.exit_code, wrote.stderr]).toEqual([0, '']);
      const reread = await ws.sandbox.exec.run({
        cmd: 'dd if=kept.bin iflag=direct bs=1M status=none | sha256sum',
      });
      expect(reread.stdout).toBe(wrote.stdout);
      const upload = randomFile(8 * MIB);
      await ws.sandbox.files.write('host/upload.bin', upload);
      expect(sha256(await ws.sandbox.files.read('host/upload.bin'))).toBe(sha256(upload));

      // Room again: the database writes without a restart.
      await world.disk.free();
      expect((await newKey()).status).toBe(201);
      await world.broker.database.ping();
      await ws.sandbox.exec.run({ argv: ['rm', '-f', 'kept.bin', 'host/upload.bin'] });
    }
  }, 600_000);

  it('an image the host cannot allocate whole is refused with 507 and left unmounted', async () => {
    // Room for mkfs's metadata, not for the image: what a disk filled since the admission gives.
    await world.disk.fillUp({ leaveBytes: 8 * MIB });
    const volumes = detectWorkspaceVolumes({ preallocate: true });
    if (volumes === undefined) throw new Error('workspace volumes need root and loop devices');
    const dir = await mkdtemp(path.join(world.disk.root, 'image-'));
    try {
      const workspace = path.join(dir, 'workspace');
      await mkdir(workspace);
      const refused = await rejectionOf(
        volumes.create(path.join(dir, 'workspace.img'), workspace, 64 * MIB, undefined),
        'an image',
      );
      expect(refused).toMatchObject({ code: 'INSUFFICIENT_STORAGE', status: 507 });
      expect(refused.message).toMatch(/^not enough disk for a workspace of 67108864 bytes: no space left/);
      expect(readFileSync('/proc/self/mounts', 'utf8')).not.toContain(workspace);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('the database reopens from its files with every row the broker said it wrote', async () => {
    const count = await world.broker.database.prisma.apiKey.count();
    await world.broker.close();
    const reopened = await openDatabase({ dataDir: path.join(world.disk.root, 'broker') });
    try {
      expect(await reopened.prisma.apiKey.count()).toBe(count);
      // The admin key and every key answered 201.
      expect(count).toBe(created + 1);
      expect(await reopened.prisma.sandbox.count()).toBeGreaterThanOrEqual(3);
    } finally {
      await reopened.close();
    }
    // Closed already: afterAll must not close it again.
    world = { ...world, close: () => world.disk.close() };
  }, 120_000);
});
