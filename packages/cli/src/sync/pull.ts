import { mkdir, rm } from 'node:fs/promises';
import { NotFoundError } from '@sbx/client';
import { localPathOf, walkLocal, type LocalTree } from './local-tree.js';
import { planSync } from './plan.js';
import { runPool, TRANSFER_CONCURRENCY } from './pool.js';
import { remotePathOf, walkRemote, type RemoteTree } from './remote-tree.js';
import { conflictReason, type SyncTarget } from './sync-target.js';
import { downloadFile } from './transfer.js';

/**
 * Makes the local directory look like the sandbox one (created when missing): new and
 * changed files downloaded with the sandbox's mtimes, missing directories created, and
 * with `--delete` local files the sandbox does not have removed.
 */
export async function pull(t: SyncTarget): Promise<void> {
  const remote = await walkRemote(t.files, t.remoteRoot, t.thread);
  if (remote === undefined)
    throw new NotFoundError(
      'NOT_FOUND',
      `sync: ${t.thread}:${t.remoteRoot}: no such directory in the sandbox`,
    );
  await mkdir(t.localRoot, { recursive: true });
  const local = await walkLocal(t.localRoot);
  const plan = planSync(remote, local, t.deleteExtra, (rel) => unchanged(t, rel, local, remote));
  for (const rel of plan.conflicts) {
    const reason = conflictReason(remote.get(rel)?.type === 'dir', 'in the sandbox', 'here');
    t.report.record({ action: 'conflict', path: rel, reason });
  }
  for (const rel of plan.removals) {
    const isDir = local.get(rel)?.type === 'dir';
    await rm(localPathOf(t.localRoot, rel), { recursive: true, force: true });
    t.manifest.forget(rel);
    t.report.record({ action: 'delete', path: isDir ? `${rel}/` : rel });
  }
  for (const rel of plan.mkdirs) {
    await mkdir(localPathOf(t.localRoot, rel), { recursive: true });
    t.report.record({ action: 'mkdir', path: `${rel}/` });
  }
  await runPool(plan.copies, TRANSFER_CONCURRENCY, (rel) => pullFile(t, remote, rel));
  for (let i = 0; i < plan.unchanged; i++) t.report.skip();
  t.manifest.retain(new Set([...remote].filter(([, e]) => e.type === 'file').map(([rel]) => rel)));
  t.manifest.save();
}

/**
 * rsync's rule (same size and mtime, which a pull sets), or both sides as the manifest
 * last saw them (a file pushed from here keeps its own mtime, the sandbox's copy another).
 */
function unchanged(t: SyncTarget, rel: string, local: LocalTree, remote: RemoteTree): boolean {
  const l = local.get(rel);
  const r = remote.get(rel);
  if (l === undefined || r === undefined) return false;
  const sameStamp = l.size === r.size && Math.abs(l.mtimeMs - Date.parse(r.mtime)) < 1;
  return sameStamp || t.manifest.inSync(rel, l, r);
}

async function pullFile(t: SyncTarget, remote: RemoteTree, rel: string): Promise<void> {
  const entry = remote.get(rel);
  if (entry?.type !== 'file') return;
  let local;
  try {
    local = await downloadFile(
      t.files,
      remotePathOf(t.remoteRoot, rel),
      localPathOf(t.localRoot, rel),
      entry,
    );
  } catch (err) {
    // Removed in the sandbox between the listing and the download: nothing to copy.
    if (err instanceof NotFoundError) return;
    throw err;
  }
  t.manifest.record(rel, local, entry.mtime);
  t.report.record({ action: 'download', path: rel, bytes: local.size });
}
