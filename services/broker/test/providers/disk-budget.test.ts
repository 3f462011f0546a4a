// The local provider's disk budget: the arithmetic on plain numbers, and the reading of a
// real data directory (sparse images made with truncate in a temporary directory, the real
// statfs of its filesystem). Nothing of node:fs is mocked.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, open, rm, statfs, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SbxError } from '@sbx/protocol';
import {
  assertDiskBudget,
  DiskBudget,
  diskReserveBytes,
  readDiskUsage,
  weighDiskBudget,
  type DiskBudgetInput,
} from '../../src/providers/disk-budget.js';

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

describe('disk budget arithmetic', () => {
  // 100 GiB filesystem, 10 GiB available, reserve max(1 GiB, 5 GiB) = 5 GiB; one other image
  // promises 4 GiB and occupies 1 GiB: 10 − 5 − 3 = 2 GiB are left for a new workspace.
  const input = (request: DiskBudgetInput['request']): DiskBudgetInput => ({
    filesystem: { totalBytes: 100 * GIB, availableBytes: 10 * GIB },
    others: [{ promisedBytes: 4 * GIB, allocatedBytes: GIB }],
    request,
  });

  it('reserves max(1 GiB, 5 % of the filesystem), or what the options say', () => {
    expect(diskReserveBytes(100 * GIB)).toBe(5 * GIB);
    expect(diskReserveBytes(4 * GIB)).toBe(GIB);
    expect(diskReserveBytes(100 * GIB, { minBytes: 0, fraction: 0.1 })).toBe(10 * GIB);
    expect(diskReserveBytes(100 * GIB, { minBytes: 2 * GIB, fraction: 0 })).toBe(2 * GIB);
  });

  it('admits a promise that fits exactly and refuses one byte more with 507, naming both numbers', () => {
    expect(assertDiskBudget(input({ promisedBytes: 2 * GIB, allocatedBytes: 0 }))).toEqual({
      fits: true,
      neededBytes: 2 * GIB,
      availableBytes: 2 * GIB,
    });
    let refusal: unknown;
    try {
      assertDiskBudget(input({ promisedBytes: 2 * GIB + 1, allocatedBytes: 0 }));
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(SbxError);
    const error = refusal as SbxError;
    expect([error.code, error.status]).toEqual(['INSUFFICIENT_STORAGE', 507]);
    expect(error.message).toContain(`needs ${2 * GIB + 1} bytes`);
    expect(error.message).toContain(`${2 * GIB} bytes are available`);
  });

  it('credits a resumed workspace with what its image already occupies', () => {
    expect(weighDiskBudget(input({ promisedBytes: 4 * GIB, allocatedBytes: 3 * GIB }))).toMatchObject({
      fits: true,
      neededBytes: GIB,
    });
    expect(weighDiskBudget(input({ promisedBytes: 4 * GIB, allocatedBytes: GIB })).fits).toBe(false);
  });

  it('gives no credit for an image that occupies more than it promised, and never reports less than 0', () => {
    const base = input({ promisedBytes: 2 * GIB, allocatedBytes: 0 });
    const others = [...base.others, { promisedBytes: MIB, allocatedBytes: 2 * GIB }];
    expect(weighDiskBudget({ ...base, others }).fits).toBe(true);
    const full = { ...base, filesystem: { totalBytes: 100 * GIB, availableBytes: GIB } };
    expect(weighDiskBudget(full)).toMatchObject({ fits: false, availableBytes: 0 });
  });
});

describe('disk budget of a real data directory', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });
  async function dataDir(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'sbx-disk-budget-'));
    dirs.push(dir);
    return dir;
  }
  /** A sparse workspace image as the local provider makes one (open, then truncate). */
  async function image(dir: string, id: string, bytes: number): Promise<string> {
    await mkdir(path.join(dir, 'sandboxes', id), { recursive: true });
    const file = path.join(dir, 'sandboxes', id, 'workspace.img');
    await writeFile(file, '');
    await truncate(file, bytes);
    return file;
  }
  /** What a new workspace could promise here right now. */
  async function headroom(dir: string): Promise<number> {
    const usage = await readDiskUsage(dir, 'sb_probe');
    const { availableBytes } = weighDiskBudget({
      ...usage,
      request: { promisedBytes: 0, allocatedBytes: 0 },
    });
    if (availableBytes < 64 * MIB)
      throw new Error(`the test needs free disk space, ${availableBytes} bytes left`);
    return availableBytes;
  }
  const REFUSED = { code: 'INSUFFICIENT_STORAGE', status: 507 };
  /** Admits and releases at once (a resume, or a create whose image is gone again). */
  const admitted = async (budget: DiskBudget, sandboxId: string, bytes: number): Promise<true> => {
    (await budget.admit(sandboxId, bytes)).release();
    return true;
  };

  it('reads the promised and allocated bytes of every image and the statfs of its filesystem', async () => {
    const dir = await dataDir();
    await image(dir, 'sb_sparse', 10 * GIB);
    const written = await image(dir, 'sb_written', 64 * MIB);
    const handle = await open(written, 'r+');
    await handle.write(Buffer.alloc(4 * MIB, 1), 0, 4 * MIB, 0);
    await handle.sync();
    await handle.close();
    await mkdir(path.join(dir, 'sandboxes', 'sb_plain')); // a sandbox without a volume
    await image(dir, 'sb_own', 8 * MIB);

    const usage = await readDiskUsage(dir, 'sb_own');
    const sorted = usage.others.toSorted((a, b) => a.promisedBytes - b.promisedBytes);
    expect(sorted.map((i) => i.promisedBytes)).toEqual([64 * MIB, 10 * GIB]);
    expect(sorted[0]!.allocatedBytes).toBeGreaterThanOrEqual(4 * MIB);
    expect(sorted[1]!.allocatedBytes).toBeLessThan(MIB); // sparse: a promise, not a cost
    expect(usage.own?.promisedBytes).toBe(8 * MIB);
    expect(usage.own?.allocatedBytes).toBeLessThan(MIB);
    const space = await statfs(dir);
    expect(usage.filesystem.totalBytes).toBe(space.blocks * space.bsize);
    expect(usage.filesystem.availableBytes).toBeGreaterThan(0);
  });

  it('refuses a create while the images promise more than the filesystem holds, and admits it once one is gone', async () => {
    const dir = await dataDir();
    const total = (await readDiskUsage(dir, 'sb_new')).filesystem.totalBytes;
    const huge = await image(dir, 'sb_huge', total);
    const budget = new DiskBudget(dir);
    await expect(budget.admit('sb_new', MIB)).rejects.toMatchObject(REFUSED);
    await rm(huge);
    await expect(admitted(budget, 'sb_new', MIB)).resolves.toBe(true);
  });

  it('does not count a resumed sandbox’s own image twice', async () => {
    const dir = await dataDir();
    const size = Math.floor((await headroom(dir)) * 0.7);
    await image(dir, 'sb_kept', size);
    const budget = new DiskBudget(dir);
    await expect(admitted(budget, 'sb_kept', size)).resolves.toBe(true);
    // Another sandbox of the same size would be a second promise of 70 %.
    await expect(budget.admit('sb_other', size)).rejects.toMatchObject(REFUSED);
  });

  it('counts concurrent admissions against each other until they are released', async () => {
    const dir = await dataDir();
    const share = Math.floor((await headroom(dir)) * 0.6);
    const budget = new DiskBudget(dir);
    const results = await Promise.allSettled([budget.admit('sb_a', share), budget.admit('sb_b', share)]);
    const [first, second] = results;
    expect(first.status).toBe('fulfilled');
    expect(second).toMatchObject({ status: 'rejected', reason: { code: 'INSUFFICIENT_STORAGE' } });
    if (first.status === 'fulfilled') first.value.release();
    await expect(admitted(budget, 'sb_b', share)).resolves.toBe(true);
  });

  it('keeps an admission while its image is made, without counting both', async () => {
    const dir = await dataDir();
    const share = Math.floor((await headroom(dir)) * 0.6);
    const budget = new DiskBudget(dir);
    const admission = await budget.admit('sb_a', share);
    await image(dir, 'sb_a', share); // the image now carries the promise the admission held
    await expect(budget.admit('sb_b', share)).rejects.toMatchObject(REFUSED);
    admission.release();
    await expect(budget.admit('sb_b', share)).rejects.toMatchObject(REFUSED); // still promised by the image itself
    await rm(path.join(dir, 'sandboxes', 'sb_a'), { recursive: true });
    await expect(admitted(budget, 'sb_b', share)).resolves.toBe(true);
  });

  it('rejects a size that is not a whole number of bytes', async () => {
    const budget = new DiskBudget(await dataDir());
    await expect(budget.admit('sb_x', -1)).rejects.toBeInstanceOf(RangeError);
    await expect(budget.admit('sb_x', 1.5)).rejects.toBeInstanceOf(RangeError);
  });
});
