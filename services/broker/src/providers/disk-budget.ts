// The local provider's disk budget (docs/security.md, "Resource limits"). Each workspace
// volume is a sparse image of the tenant's `max_disk_mb`: creating one costs almost nothing,
// so without a budget the images of a data directory may promise far more than its
// filesystem holds, and the first sandboxes to fill theirs take the host's disk — and the
// broker's embedded database in the same directory — down with them. A create (or a resume)
// may proceed only while every image's promise can still be kept:
//
//   Σ over the other images of (promised − allocated)  +  (new promise − its own allocated)
//     ≤  available space of the filesystem  −  reserve
//
// which is "the sum of all promised sizes plus the new one ≤ free space plus what the sparse
// images already occupy, minus the reserve" with no image credited beyond its own promise.
import { readdir, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '@sbx/service-kit';
import { SbxError } from '@sbx/protocol';
import { sandboxPaths } from './sandbox-layout.js';

/** A workspace image: its promise (the apparent size) and what it occupies on disk now. */
export interface WorkspaceImageUsage {
  readonly promisedBytes: number;
  readonly allocatedBytes: number;
}

/** The data directory's filesystem (statfs: `blocks × bsize`, `bavail × bsize`). */
export interface FilesystemSpace {
  readonly totalBytes: number;
  /** Free to unprivileged users: blocks the filesystem keeps for root are left to the host. */
  readonly availableBytes: number;
}

/**
 * What stays free whatever the images promise: max(`minBytes`, `fraction` × the filesystem).
 * The default, max(1 GiB, 5 %): 1 GiB is Postgres's default `max_wal_size`, what the embedded
 * database may write between checkpoints; 5 % is ext4's default root reserve, scaling with
 * large disks for logs, the agent bundle and the sandboxes' state files.
 */
export interface DiskReserve {
  readonly minBytes: number;
  readonly fraction: number;
}

export const DEFAULT_DISK_RESERVE: DiskReserve = Object.freeze({ minBytes: 1024 ** 3, fraction: 0.05 });

export interface DiskBudgetInput {
  readonly filesystem: FilesystemSpace;
  /** Every image on the data directory except the requested one (pending creations included). */
  readonly others: readonly WorkspaceImageUsage[];
  /** A create: its size and 0 allocated; a resume: its size and what its image occupies. */
  readonly request: WorkspaceImageUsage;
  readonly reserve?: DiskReserve;
}

export interface DiskVerdict {
  readonly fits: boolean;
  /** What the requested workspace may still grow by. */
  readonly neededBytes: number;
  /** What is left for it once the reserve and the other images' promises are kept (≥ 0). */
  readonly availableBytes: number;
}

export function diskReserveBytes(totalBytes: number, reserve: DiskReserve = DEFAULT_DISK_RESERVE): number {
  return Math.max(reserve.minBytes, Math.ceil(totalBytes * reserve.fraction));
}

const growth = (image: WorkspaceImageUsage): number =>
  Math.max(0, image.promisedBytes - image.allocatedBytes);

/** Whether the request fits; plain arithmetic on the numbers given. */
export function weighDiskBudget(input: DiskBudgetInput): DiskVerdict {
  const promisedToOthers = input.others.reduce((sum, image) => sum + growth(image), 0);
  const headroom =
    input.filesystem.availableBytes -
    diskReserveBytes(input.filesystem.totalBytes, input.reserve) -
    promisedToOthers;
  const neededBytes = growth(input.request);
  return { fits: neededBytes <= headroom, neededBytes, availableBytes: Math.max(0, headroom) };
}

/** INSUFFICIENT_STORAGE (507) naming the needed and available bytes when the request does not fit. */
export function assertDiskBudget(input: DiskBudgetInput): DiskVerdict {
  const verdict = weighDiskBudget(input);
  if (!verdict.fits)
    throw new SbxError(
      'INSUFFICIENT_STORAGE',
      `not enough disk for a workspace of ${input.request.promisedBytes} bytes: it needs ` +
        `${verdict.neededBytes} bytes, ${verdict.availableBytes} bytes are available`,
    );
  return verdict;
}

/**
 * A failure to make a workspace (its state files, `mkfs.ext4` or `fallocate` of its image)
 * because the data directory's disk is full, as INSUFFICIENT_STORAGE about `what`; undefined
 * for any other failure, and for an SbxError (already the caller's answer). The budget cannot
 * see other writers between an admission and the image's creation, nor inodes running out:
 * without this the create answered a retryable 503 (reliability/disk/host-full.test.ts).
 */
export function noSpaceRefusal(err: unknown, what: string): SbxError | undefined {
  if (err instanceof SbxError || !isNoSpace(err)) return undefined;
  return new SbxError(
    'INSUFFICIENT_STORAGE',
    `not enough disk for ${what}: no space left on the sandbox host's disk`,
    { cause: err },
  );
}

/** ENOSPC or EDQUOT from node's fs, or a tool's "No space left on device", in `err` or its causes. */
function isNoSpace(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const { code, stderr } = current as { code?: unknown; stderr?: unknown };
    if (code === 'ENOSPC' || code === 'EDQUOT') return true;
    if (typeof stderr === 'string' && /No space left on device|Disk quota exceeded/.test(stderr)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

export interface DiskUsage {
  readonly filesystem: FilesystemSpace;
  readonly others: readonly WorkspaceImageUsage[];
  /** The image of the sandbox asked about, when it has one (a resume). */
  readonly own: WorkspaceImageUsage | undefined;
}

/**
 * Reads the filesystem of `dataDir` and every `<dataDir>/sandboxes/<id>/workspace.img`; the
 * image of `sandboxId` is `own`, not one of `others`. `pending` adds promises whose images
 * are still being made (an image counts for the larger of its size and its pending promise).
 */
export async function readDiskUsage(
  dataDir: string,
  sandboxId: string,
  pending: ReadonlyMap<string, number> = new Map(),
): Promise<DiskUsage> {
  const space = await statfs(dataDir);
  const ids = await readdir(path.join(dataDir, 'sandboxes')).catch(ignoreMissing([]));
  const images = await Promise.all(
    [...new Set([...ids, ...pending.keys()])].map(async (id) => {
      const file = await stat(sandboxPaths(dataDir, id).volumeFile).catch(ignoreMissing(undefined));
      const promisedBytes = Math.max(file?.size ?? 0, pending.get(id) ?? 0);
      const image = { promisedBytes, allocatedBytes: (file?.blocks ?? 0) * 512 };
      return { id, image: file === undefined && !pending.has(id) ? undefined : image };
    }),
  );
  return {
    filesystem: { totalBytes: space.blocks * space.bsize, availableBytes: space.bavail * space.bsize },
    others: images.flatMap(({ id, image }) => (id === sandboxId || image === undefined ? [] : [image])),
    own: images.find(({ id }) => id === sandboxId)?.image,
  };
}

/** A file that is gone (a sandbox without a volume, or one being removed) is nothing. */
function ignoreMissing<T>(value: T): (err: unknown) => T {
  return (err) => {
    if (isErrno(err, 'ENOENT')) return value;
    throw err;
  };
}

/** A promise held for a sandbox whose image is being made; release it once the image exists (or is gone). */
export interface DiskAdmission {
  release(): void;
}

/**
 * The budget of one data directory for one provider. Admissions are weighed one at a time
 * and a granted one counts until released, so concurrent creates of this process never
 * promise the same bytes twice (another process writing to the filesystem only shrinks
 * what is available, which the next admission sees).
 */
export class DiskBudget {
  readonly #dataDir: string;
  readonly #reserve: DiskReserve;
  /** The admissions granted and not released, by sandbox. */
  readonly #held = new Map<string, { readonly bytes: number }>();
  #tail: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string, reserve: DiskReserve = DEFAULT_DISK_RESERVE) {
    this.#dataDir = dataDir;
    this.#reserve = reserve;
  }

  /** INSUFFICIENT_STORAGE when a workspace of `bytes` for `sandboxId` would overcommit the disk. */
  async admit(sandboxId: string, bytes: number): Promise<DiskAdmission> {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`not a size in bytes: ${bytes}`);
    // Chained before the first await: admissions are weighed in the order they were asked for.
    const turn = this.#tail.then(async () => {
      const pending = new Map([...this.#held].map(([id, held]) => [id, held.bytes]));
      const usage = await readDiskUsage(this.#dataDir, sandboxId, pending);
      assertDiskBudget({
        filesystem: usage.filesystem,
        others: usage.others,
        request: { promisedBytes: bytes, allocatedBytes: usage.own?.allocatedBytes ?? 0 },
        reserve: this.#reserve,
      });
      const held = { bytes };
      this.#held.set(sandboxId, held);
      return {
        release: () => {
          // Only this admission's own entry: a later one for the same sandbox stays.
          if (this.#held.get(sandboxId) === held) this.#held.delete(sandboxId);
        },
      };
    });
    this.#tail = turn.catch(() => undefined);
    return await turn;
  }
}
