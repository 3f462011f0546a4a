// A filesystem of the suite's own, so filling "the host's disk" never touches the real one: a
// sparse ext4 image of a few hundred MiB, loop-mounted (needs root and loop devices; the suites
// skip elsewhere). Under /tmp, which sandbox views replace with a tmpfs: every other top-level
// directory (/var included) is bound recursively into the mount namespace of each sandbox any
// broker on the host starts, and such a copy of this disk, or of a workspace volume on it,
// keeps its loop device and files busy until that sandbox exits — hours, for another suite's
// long-lived sandboxes. That is what made `umount` answer "target is busy" here.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statfsSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MKFS = '/usr/sbin/mkfs.ext4';
/** How long an unmount waits for whoever still holds the filesystem (a detaching loop device). */
const UNMOUNT_CEILING_MS = 60_000;

/** Root, loop devices and mkfs.ext4: what a small disk (and the provider's workspace volumes) need. */
export const canMakeSmallDisk =
  process.getuid?.() === 0 && existsSync('/dev/loop-control') && existsSync(MKFS);

export interface FillOptions {
  /** Write as this user: ext4 keeps its reserved blocks (5 %) for root, as on a real host. */
  readonly uid?: number;
  /** Leave this many bytes free (rounded down to whole blocks). */
  readonly leaveBytes?: number;
}

export interface SmallDisk {
  /** The mount point: make directories here. */
  readonly root: string;
  /** Free bytes for root (`bfree`) and for everyone else (`bavail`); free inodes. */
  space(): { free: number; available: number; inodes: number };
  /** Writes one filler file until the disk is full for its writer (or only `leaveBytes` are left). */
  fillUp(options?: FillOptions): Promise<number>;
  /** Creates empty files as `uid` until no inode is left (blocks stay free); how many. */
  useUpInodes(uid: number): Promise<number>;
  /** Whether `bytes` more can be written as `uid` (root by default); the probe is removed again. */
  canWrite(bytes: number, uid?: number): Promise<boolean>;
  /** Deletes every filler. */
  free(): Promise<void>;
  /**
   * Unmounts every mount below the root (workspace volumes a provider left), then the disk,
   * each once whoever holds it has let go, and deletes the image.
   */
  close(): Promise<void>;
}

const MIB = 1024 * 1024;

/** A disk of `mib` MiB with one inode per `bytesPerInode` (ext4's default for small disks: 4096). */
export function makeSmallDisk(mib: number, bytesPerInode = 4096): SmallDisk {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-small-disk-')));
  // Traversable: sandbox users reach the agent bundle on it, as under any data directory.
  chmodSync(dir, 0o755);
  const image = path.join(dir, 'disk.img');
  const root = path.join(dir, 'mnt');
  execFileSync('truncate', ['-s', `${mib}M`, image]);
  execFileSync(MKFS, ['-q', '-F', '-m', '5', '-i', String(bytesPerInode), image]);
  execFileSync('mkdir', [root]);
  execFileSync('mount', ['-o', 'loop', image, root]);
  const fillers: string[] = [];
  const space = (): { free: number; available: number; inodes: number } => {
    const fs = statfsSync(root);
    return { free: fs.bfree * fs.bsize, available: fs.bavail * fs.bsize, inodes: fs.ffree };
  };
  return {
    root,
    space,
    async fillUp(options = {}) {
      const file = path.join(root, `filler-${fillers.length}`);
      fillers.push(file);
      const handle = await open(file, 'wx', 0o666);
      try {
        if (options.uid !== undefined) await handle.chown(options.uid, options.uid);
      } finally {
        await handle.close();
      }
      return writeUntilFull(file, options, space);
    },
    async useUpInodes(uid) {
      const inodes = path.join(root, `filler-${fillers.length}`);
      fillers.push(inodes);
      const before = space().inodes;
      execFileSync('mkdir', ['-m', '0777', inodes]);
      // Shell built-ins only: tens of thousands of files without a process each. `true`, not
      // `:`: a failed redirection of a special built-in ends the shell.
      const script = 'exec 2>/dev/null; i=0; while true > "$0/$i"; do i=$((i+1)); done; exit 0';
      await run('sh', ['-c', script, inodes], {
        uid,
        gid: uid,
      });
      return before - space().inodes;
    },
    async canWrite(bytes, uid) {
      // Made by root and handed over: the disk's root directory is root's alone.
      const probe = path.join(root, `probe-${process.pid}`);
      try {
        await run('install', [
          '-m',
          '0644',
          ...(uid === undefined ? [] : ['-o', String(uid)]),
          '/dev/null',
          probe,
        ]);
        return await appendZeros(probe, bytes, uid);
      } finally {
        await rm(probe, { force: true });
      }
    },
    async free() {
      for (const file of fillers.splice(0)) await rm(file, { recursive: true, force: true });
    },
    async close() {
      for (const target of mountsBelow(root).toReversed()) await unmountWhenLetGo(target);
      if (mountsBelow(dir).includes(root)) await unmountWhenLetGo(root);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * `umount target`, again while it is busy: a workspace image's loop device keeps its file on
 * this disk open for a moment after the workspace was unmounted (autoclear detaches it
 * asynchronously; fuser names only "kernel"). Past the ceiling the mount is detached anyway
 * (`-l`: nothing is left in the mount table) and the holders are named in the error.
 */
async function unmountWhenLetGo(target: string): Promise<void> {
  const deadline = Date.now() + UNMOUNT_CEILING_MS;
  for (;;) {
    try {
      await run('umount', [target]);
      return;
    } catch (err) {
      const busy = /busy/.test(String((err as { stderr?: unknown }).stderr));
      if (!busy) throw err;
      if (Date.now() > deadline) {
        const holders = await holdersOf(target);
        await run('umount', ['-l', target]);
        throw new Error(`${target} was still busy after ${UNMOUNT_CEILING_MS} ms; held by:\n${holders}`, {
          cause: err,
        });
      }
      await delay(100);
    }
  }
}

/**
 * Appends to `file` (as `uid` when given: a child process, since this one is root) in
 * shrinking chunks until the writer gets ENOSPC at a single block, or until only
 * `leaveBytes` are left.
 */
async function writeUntilFull(
  file: string,
  options: FillOptions,
  space: () => { free: number; available: number },
): Promise<number> {
  const leave = options.leaveBytes ?? 0;
  let written = 0;
  for (let chunk = 16 * MIB; chunk >= 4096; chunk /= 4) {
    for (;;) {
      const left = (options.uid === undefined ? space().free : space().available) - leave;
      const size = Math.min(chunk, Math.floor(left / 4096) * 4096);
      if (size < 4096) return written;
      if (!(await appendZeros(file, size, options.uid))) break;
      written += size;
    }
  }
  return written;
}

/**
 * `head -c size /dev/zero >> file` as `uid`; false on ENOSPC (the partial write stays). Never
 * synchronous: the broker under test runs in this process and must keep answering meanwhile.
 */
async function appendZeros(file: string, size: number, uid: number | undefined): Promise<boolean> {
  try {
    await run(
      'sh',
      ['-c', `head -c ${size} /dev/zero >> "$0"`, file],
      uid === undefined ? {} : { uid, gid: uid },
    );
    return true;
  } catch {
    return false;
  }
}

/** Who holds `target`: processes (fuser) and loop devices backed by files on it (the kernel). */
async function holdersOf(target: string): Promise<string> {
  const processes = await run('fuser', ['-vm', target]).then(
    (out) => out.stderr + out.stdout,
    (failed: { stderr?: unknown }) => String(failed.stderr),
  );
  const loops = (await run('losetup', ['-a'])).stdout.split('\n').filter((line) => line.includes(target));
  return [...processes.split('\n').filter((line) => !line.includes('Cannot stat')), ...loops].join('\n');
}

function mountsBelow(root: string): string[] {
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((target) => target.startsWith(`${root}/`));
}
