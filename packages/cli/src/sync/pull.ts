import { mkdir, rm } from 'node:fs/promises';
import { ConflictError, NotFoundError } from '@sbx/client';
import { blockedParent, localPathOf, walkLocal, type LocalTree } from './local-tree.js';
import { planSync } from './plan.js';
import { runPool, TRANSFER_CONCURRENCY } from './pool.js';
import { remotePathOf, walkRemote, type RemoteTree } from './remote-tree.js';
import { conflictReason, type SyncTarget } from './sync-target.js';
import { downloadFile } from './transfer.js';

/** Decides whether a local write at `rel` must be skipped (true), reporting why once per blocking path. */
type LocalGuard = (rel: string, includeSelf?: boolean) => Promise<boolean>;

/**
 * Makes the local directory look like the sandbox one (created when missing): new and
 * changed files downloaded with the sandbox's mtimes, missing directories created, and
 * with `--delete` local files the sandbox does not have removed. Nothing is written
 * through a local symlink, nor under a name the sandbox should not have listed.
 */
export async function pull(t: SyncTarget): Promise<void> {
  const refused = new Set<string>();
  const remote = await walkRemote(t.files, t.remoteRoot, t.thread, (rel, reason) => {
    refused.add(rel);
    t.report.record({ action: 'ignore', path: rel, reason });
  });
  if (remote === undefined)
    throw new NotFoundError(`sync: ${t.thread}:${t.remoteRoot}: no such directory in the sandbox`);
  await mkdir(t.localRoot, { recursive: true });
  const local = await walkLocal(t.localRoot);
  const plan = planSync(remote, local, t.deleteExtra, (rel) => unchanged(t, rel, local, remote));
  for (const rel of plan.conflicts) {
    const reason = conflictReason(remote.get(rel)?.type === 'dir', 'in the sandbox', 'here');
    t.report.record({ action: 'conflict', path: rel, reason });
  }
  // A name the sandbox listed but may not have is not a reason to delete the local one.
  const removals = plan.removals.filter((rel) => !refused.has(rel));
  if (removals.length > 0) requireSameSandbox(t);
  const blocked = localGuard(t);
  for (const rel of removals) {
    if (await blocked(rel)) continue;
    const isDir = local.get(rel)?.type === 'dir';
    await rm(localPathOf(t.localRoot, rel), { recursive: true, force: true });
    t.manifest.forget(rel);
    t.report.record({ action: 'delete', path: isDir ? `${rel}/` : rel });
  }
  for (const rel of plan.mkdirs) {
    if (await blocked(rel, true)) continue;
    await mkdir(localPathOf(t.localRoot, rel), { recursive: true });
    t.report.record({ action: 'mkdir', path: `${rel}/` });
  }
  await runPool(plan.copies, TRANSFER_CONCURRENCY, async (rel) => {
    if (!(await blocked(rel))) await pullFile(t, remote, rel);
  });
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

/**
 * `--delete` mirrors what the sandbox lists: if a renegotiation moved the thread to another
 * sandbox meanwhile (the cached one ended, someone ensured a new, empty one), that listing
 * is not the workspace the user meant, and deleting by it could empty their directory.
 */
function requireSameSandbox(t: SyncTarget): void {
  const now = t.currentSandbox();
  if (now === t.sandboxAtStart) return;
  throw new ConflictError(
    `sync: the thread's sandbox changed during the sync (${t.sandboxAtStart ?? 'none'} → ${now ?? 'none'}); ` +
      `--delete refused, nothing was deleted: check sbx ls ${t.thread}: and run the sync again`,
  );
}

/** Refuses writes below a local symlink (or a file where a directory belongs): reported once each. */
function localGuard(t: SyncTarget): LocalGuard {
  const reported = new Set<string>();
  return async (rel, includeSelf = false) => {
    const blocker = await blockedParent(t.localRoot, rel, includeSelf);
    if (blocker === undefined) return false;
    if (!reported.has(blocker)) {
      reported.add(blocker);
      const reason = 'a symlink or a file here, not a directory: nothing is written through it';
      t.report.record({ action: 'ignore', path: `${blocker}/`, reason });
    }
    return true;
  };
}
