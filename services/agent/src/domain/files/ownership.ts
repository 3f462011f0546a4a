import { lchown, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

/**
 * An agent running as root would otherwise leave root-owned files in a workspace whose
 * processes run as an unprivileged user (the launcher's `runAs`), who could then no
 * longer edit them. So a new file or directory takes the owner of the directory it is
 * made in, and a replaced file keeps its owner.
 */
const runsAsRoot = process.getuid?.() === 0;

export interface Owner {
  readonly uid: number;
  readonly gid: number;
}

export async function ownerOfDirectory(dir: string): Promise<Owner | undefined> {
  if (!runsAsRoot) return undefined;
  const stats = await stat(dir);
  return { uid: stats.uid, gid: stats.gid };
}

export async function giveHandleTo(handle: FileHandle, owner: Owner | undefined): Promise<void> {
  if (runsAsRoot && owner !== undefined) await handle.chown(owner.uid, owner.gid);
}

/** New directories (`mkdir`, created parents) inherit the owner of the directory they were made in. */
export async function inheritOwner(path: string, parentDir: string): Promise<void> {
  const owner = await ownerOfDirectory(parentDir);
  if (owner !== undefined) await lchown(path, owner.uid, owner.gid);
}
