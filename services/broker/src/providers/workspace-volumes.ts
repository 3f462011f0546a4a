import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, open, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { noSpaceRefusal } from './disk-budget.js';
import { mountPoints, withWorkspacesDir } from './shared-parent.js';

const run = promisify(execFile);
const MKFS = '/usr/sbin/mkfs.ext4';
const MOUNT_TIMEOUT_MS = 30_000;

/**
 * A workspace of bounded size: an ext4 image of the sandbox's own (sparse, so it takes
 * only what is written, unless preallocated), loop-mounted on the workspace directory.
 * Everything written there — by a process or through the file API — then meets "No space
 * left on device" at the tenant's `max_disk_mb`, without touching the host's free space or
 * other sandboxes.
 * Needs root and loop devices; elsewhere the workspace is a plain directory (docs/security.md).
 */
export interface WorkspaceVolumes {
  /** Makes the image (owned inside by `uid`) and mounts it on `workspace`. */
  create(image: string, workspace: string, bytes: number, uid: number | undefined): Promise<void>;
  /** Mounts an existing image again (a resume), unless it is mounted already. */
  mount(image: string, workspace: string): Promise<void>;
  /** Unmounts the workspace if it is a mount; its processes must be gone. */
  unmount(workspace: string): Promise<void>;
}

export interface WorkspaceVolumeOptions {
  /**
   * Allocate each image's whole size on the host when it is made or mounted again (`fallocate`),
   * instead of leaving it sparse. A sparse image's blocks are taken from the host's free space
   * only when written: once anything else (a root process, the broker's own database, logs)
   * has filled the host's disk, writes the sandbox was told had succeeded are lost and its
   * workspace turns read-only (ext4 aborts its journal) until mounted again — found by
   * reliability/disk/host-full.test.ts. Preallocated, the promise is kept whatever fills the
   * host; a host without the room refuses the create (or resume) with 507 instead.
   */
  readonly preallocate?: boolean | undefined;
}

export function detectWorkspaceVolumes(options: WorkspaceVolumeOptions = {}): WorkspaceVolumes | undefined {
  const usable = process.getuid?.() === 0 && existsSync('/dev/loop-control') && existsSync(MKFS);
  return usable ? loopVolumes(options.preallocate === true) : undefined;
}

function loopVolumes(preallocate: boolean): WorkspaceVolumes {
  return {
    async create(image, workspace, bytes, uid) {
      const file = await open(image, 'wx', 0o600);
      try {
        await file.truncate(bytes);
      } finally {
        await file.close();
      }
      const owner = uid === undefined ? [] : ['-E', `root_owner=${uid}:${uid}`];
      await run(MKFS, ['-q', '-F', '-m', '0', ...owner, image], { timeout: MOUNT_TIMEOUT_MS });
      // After mkfs: it discards (punches holes in) a file it formats.
      if (preallocate) await reserveImage(image, bytes);
      await mountImage(image, workspace);
      // ext4's lost+found is root's: an empty workspace shows nothing it did not make.
      await rmdir(path.join(workspace, 'lost+found')).catch(() => undefined);
      // The volume's root replaces the directory's mode: the workspace stays its user's alone.
      await chmod(workspace, 0o700);
    },
    async mount(image, workspace) {
      if (!existsSync(image) || (await isMountPoint(workspace))) return;
      // An image made sparse (before the setting, or copied in) gets its room back too.
      if (preallocate) await reserveImage(image, (await stat(image)).size);
      await mountImage(image, workspace);
    },
    unmount: unmountWorkspace,
  };
}

/** Allocates what of the image is still a hole; mode 0 keeps what is written (mkfs's, a workspace's). */
function reserveImage(image: string, bytes: number): Promise<unknown> {
  return run('fallocate', ['-l', String(bytes), image], { timeout: MOUNT_TIMEOUT_MS }).catch(
    (err: unknown) => {
      throw noSpaceRefusal(err, `a workspace of ${bytes} bytes`) ?? err;
    },
  );
}

function mountImage(image: string, workspace: string): Promise<unknown> {
  return withWorkspacesDir(path.dirname(workspace), async (parent) => {
    await parent.share();
    await run('mount', ['-o', 'loop,nosuid,nodev', image, workspace], { timeout: MOUNT_TIMEOUT_MS });
  });
}

async function unmountWorkspace(workspace: string): Promise<void> {
  await withWorkspacesDir(path.dirname(workspace), async (parent) => {
    if (await isMountPoint(workspace)) await run('umount', [workspace], { timeout: MOUNT_TIMEOUT_MS });
    await parent.releaseWhenEmpty();
  });
}

/** Whether `dir` is a mount point, from the kernel's own table. */
async function isMountPoint(dir: string): Promise<boolean> {
  return (await mountPoints()).includes(path.resolve(dir));
}
