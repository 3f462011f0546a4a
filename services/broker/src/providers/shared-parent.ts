// Every sandbox's view binds the host's top-level directories recursively (agent-view.ts,
// bubblewrap.ts), and with them a copy of each workspace volume mounted there: with a data
// directory under /var, /root or a home, each new view took every other sandbox's mounted
// workspace, hidden under the data directory's tmpfs yet holding it. A stopped sandbox's image
// stayed in use, and its resume mounted the same ext4 image a second time on another loop
// device (local-provider-mounts.test.ts). Unbindable would keep the copies out, but bubblewrap
// makes every mount of a new view a slave, which clears it. So the directory the workspaces
// are mounted in is made a shared mount of itself: the views' copies are its slaves, and an
// unmount on the host unmounts them too (a mount reaches them as well, under the same tmpfs).
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MOUNT_TIMEOUT_MS = 30_000;

interface MountEntry {
  readonly id: string;
  readonly parentId: string;
  readonly device: string;
  /** The mounted directory's path within its filesystem. */
  readonly root: string;
  readonly point: string;
  /** In a peer group (mountinfo's optional field `shared:N`). */
  readonly shared: boolean;
}

/** Fields of mountinfo come octal-escaped (`\040` for a space). */
function unescape(field: string): string {
  return field.replaceAll(/\\(\d{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

async function mountEntries(): Promise<MountEntry[]> {
  const table = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  return table
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const fields = line.split(' ');
      const [id = '', parentId = '', device = '', root = '', point = ''] = fields;
      const optional = fields.slice(6, fields.indexOf('-'));
      const shared = optional.some((field) => field.startsWith('shared:'));
      return { id, parentId, device, root: unescape(root), point: unescape(point), shared };
    });
}

/** Mount points, from the kernel's own table. */
export async function mountPoints(): Promise<string[]> {
  return (await mountEntries()).map((entry) => entry.point);
}

/** Whether the top mount at `dir` is `dir` bound onto itself (what `share` makes), by any broker. */
function isSelfBind(entries: readonly MountEntry[], dir: string): boolean {
  const top = entries.findLast((entry) => entry.point === dir);
  const parent = entries.find((entry) => entry.id === top?.parentId);
  if (top === undefined || parent === undefined) return false;
  const inParent = path.join(parent.root, path.relative(parent.point, dir));
  return top.device === parent.device && top.root === inParent;
}

export interface SharedParent {
  /** Makes the directory a shared mount of itself, unless it holds mounts already. */
  share(): Promise<void>;
  /** Unmounts that bind of itself (this broker's or a killed one's) once nothing is mounted in it. */
  releaseWhenEmpty(): Promise<void>;
}

/** One change at a time in this process: two binds of one directory at once would stack. */
let turn: Promise<unknown> = Promise.resolve();

/** Runs `work` in this process's turn, with the workspaces directory `dir`. */
export function withWorkspacesDir<T>(dir: string, work: (parent: SharedParent) => Promise<T>): Promise<T> {
  const resolved = path.resolve(dir);
  const result = turn.then(() => work(parentAt(resolved)));
  turn = result.catch(() => undefined);
  return result;
}

function parentAt(dir: string): SharedParent {
  const holds = (entries: readonly MountEntry[]) =>
    entries.some((entry) => entry.point.startsWith(`${dir}/`));
  return {
    async share() {
      const entries = await mountEntries();
      const top = entries.findLast((entry) => entry.point === dir);
      // Shared already (every mount after the first): no mount(8) run on the way to a start.
      if (top?.shared === true) return;
      if (top === undefined) {
        // Workspaces left mounted (a broker killed): a bind over them would hide them.
        if (holds(entries)) return;
        await run('mount', ['--bind', dir, dir], { timeout: MOUNT_TIMEOUT_MS });
      }
      await run('mount', ['--make-shared', dir], { timeout: MOUNT_TIMEOUT_MS });
    },
    async releaseWhenEmpty() {
      // Never an operator's own filesystem mounted there: only a bind of the directory itself.
      const entries = await mountEntries();
      if (!isSelfBind(entries, dir) || holds(entries)) return;
      // Another broker on the data directory may have just mounted one: busy is fine.
      await run('umount', [dir], { timeout: MOUNT_TIMEOUT_MS }).catch(() => undefined);
    },
  };
}
