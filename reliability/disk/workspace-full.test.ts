// Issue 28, faults, bullet 4 (a full workspace): a sandbox fills its workspace volume (the
// tenant's max_disk_mb, a loop-mounted ext4 image: docs/security.md, Resource limits) to all
// but a little, then uploads through the agent a file larger than what is left, so the disk
// fills mid-upload. Each such upload answers 507 INSUFFICIENT_STORAGE in the error envelope,
// the file it would have replaced keeps its bytes (same hash), and nothing partial is left,
// neither under the file's name nor as an upload temporary; the broker, whose database lives
// on the same disk as the workspace images, keeps answering and writing, and a neighbour
// sandbox is untouched. Freeing space makes uploads work again. Images are sparse here, the
// provider's default.
//
// Bounded: one round. Long (SBX_RELIABILITY=long): ten rounds of fill, upload, free.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { InsufficientStorageError } from '../../packages/client/src/index.js';
import { rejectionOf } from '../../packages/client/test/wait-for.js';
import {
  codeOf,
  createApiKey,
  LONG,
  leftoverTemporaries,
  MIB,
  openWorkspace,
  randomFile,
  rawUpload,
  sha256,
  startDiskWorld,
  type DiskWorld,
  type Workspace,
} from './disk-kit.js';
import { canMakeSmallDisk } from './small-disk.js';

const withDisk = canMakeSmallDisk ? describe : describe.skip;

withDisk('a full workspace (real broker, PGlite and workspace volumes on a small disk)', () => {
  let world: DiskWorld;
  let filled: Workspace;
  let neighbour: Workspace;
  let keys = 0;

  beforeAll(async () => {
    world = await startDiskWorld({ preallocate: false });
    filled = await openWorkspace(world, 'thr_disk_full');
    neighbour = await openWorkspace(world, 'thr_disk_neighbour');
  }, 180_000);

  afterAll(async () => {
    await world?.close();
  }, 120_000);

  /** A process of the sandbox fills its workspace but for 1 MiB; what is left, in KiB. */
  async function fillWorkspaceButOneMib(): Promise<number> {
    const fill = await filled.sandbox.exec.run({
      cmd:
        'left=$(df -k --output=avail . | tail -1); head -c $(( (left - 1024) * 1024 )) /dev/zero > fill.bin' +
        ' && sync fill.bin && df -k --output=avail . | tail -1',
    });
    expect([fill.exit_code, fill.stderr]).toEqual([0, '']);
    return Number(fill.stdout.trim());
  }

  it('uploads that fill the workspace midway answer 507; the old file keeps its bytes; nothing is left', async () => {
    for (let round = 1; round <= (LONG ? 10 : 1); round++) {
      const old = randomFile(256 * 1024);
      await filled.sandbox.files.write('keep/old.bin', old);
      // Less than the upload, more than nothing: the upload starts writing, then meets ENOSPC.
      expect(await fillWorkspaceButOneMib()).toBeGreaterThan(256);

      const replacement = randomFile(8 * MIB);
      const raw = await rawUpload(filled, 'keep/old.bin', replacement);
      expect(raw.status).toBe(507);
      expect(raw.body).toMatchObject({
        error: {
          code: 'INSUFFICIENT_STORAGE',
          retryable: false,
          message: expect.stringMatching(
            /no space left in the workspace while writing \/workspace\/keep\/old\.bin/,
          ),
        },
      });
      // The SDK's answer: the typed error, for a new file and for a replacement alike.
      const typed = await rejectionOf(filled.sandbox.files.write('keep/new.bin', replacement), 'an upload');
      expect(typed).toBeInstanceOf(InsufficientStorageError);
      expect(typed).toMatchObject({ httpStatus: 507 });

      expect(sha256(await filled.sandbox.files.read('keep/old.bin'))).toBe(sha256(old));
      expect(await leftoverTemporaries(filled, 'keep')).toEqual([]);
      await expect(filled.sandbox.files.stat('keep/new.bin')).rejects.toMatchObject({ code: 'NOT_FOUND' });

      // The broker, on the same disk, keeps answering and writing; the neighbour is untouched.
      await filled.session.heartbeat();
      const key = await createApiKey(world, ++keys);
      expect([key.status, codeOf(key)]).toEqual([201, undefined]);
      const elsewhere = randomFile(4 * MIB);
      await neighbour.sandbox.files.write(`round-${round}.bin`, elsewhere);
      expect(sha256(await neighbour.sandbox.files.read(`round-${round}.bin`))).toBe(sha256(elsewhere));

      // Room again: the same upload goes through whole.
      await filled.sandbox.exec.run({ argv: ['rm', '-f', 'fill.bin'] });
      await filled.sandbox.files.write('keep/old.bin', replacement);
      expect(sha256(await filled.sandbox.files.read('keep/old.bin'))).toBe(sha256(replacement));
      await filled.sandbox.files.remove('keep/old.bin');
    }
  }, 900_000);

  it('a stream upload that fills the workspace midway is refused the same way and leaves the old file', async () => {
    const old = randomFile(64 * 1024);
    await filled.sandbox.files.write('streamed.bin', old);
    expect(await fillWorkspaceButOneMib()).toBeGreaterThan(256);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 16 * MIB) controller.close();
        else controller.enqueue(randomFile(MIB));
        sent += MIB;
      },
    });
    const refused = await rejectionOf(filled.sandbox.files.write('streamed.bin', body), 'a stream upload');
    expect(refused).toBeInstanceOf(InsufficientStorageError);
    expect(sha256(await filled.sandbox.files.read('streamed.bin'))).toBe(sha256(old));
    expect(await leftoverTemporaries(filled)).toEqual([]);
    await filled.sandbox.exec.run({ argv: ['rm', '-f', 'fill.bin'] });
  }, 120_000);
});
