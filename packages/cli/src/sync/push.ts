import { isFsCode, localPathOf, walkLocal, type LocalTree } from './local-tree.js';
import { planSync } from './plan.js';
import { runPool, TRANSFER_CONCURRENCY } from './pool.js';
import { remotePathOf, walkRemote, type RemoteTree } from './remote-tree.js';
import { conflictReason, type SyncTarget } from './sync-target.js';
import { uploadFile } from './transfer.js';

/**
 * Makes the sandbox directory look like the local one: new and changed files uploaded,
 * missing directories created, and with `--delete` what is not here removed there.
 * Returns the local tree it pushed (`--watch` compares later scans with it).
 */
export async function push(t: SyncTarget): Promise<LocalTree> {
  const ignore = (rel: string, reason: string): void =>
    t.report.record({ action: 'ignore', path: rel, reason });
  const local = await walkLocal(t.localRoot, ignore);
  const remote = (await walkRemote(t.files, t.remoteRoot, t.thread, ignore)) ?? (await createRoot(t));
  const plan = planSync(local, remote, t.deleteExtra, (rel) => {
    const l = local.get(rel);
    const r = remote.get(rel);
    return l !== undefined && r !== undefined && t.manifest.inSync(rel, l, r);
  });
  for (const rel of plan.conflicts) {
    const reason = conflictReason(local.get(rel)?.type === 'dir', 'here', 'in the sandbox');
    t.report.record({ action: 'conflict', path: rel, reason });
  }
  for (const rel of plan.removals) await removeRemote(t, rel, remote.get(rel)?.type === 'dir');
  for (const rel of plan.mkdirs) await makeRemoteDir(t, rel);
  await runPool(plan.copies, TRANSFER_CONCURRENCY, (rel) => pushFile(t, local, rel));
  for (let i = 0; i < plan.unchanged; i++) t.report.skip();
  t.manifest.retain(new Set([...local].filter(([, e]) => e.type === 'file').map(([rel]) => rel)));
  t.manifest.save();
  return local;
}

/** Uploads `rel` when it is (still) a file; records both sides for the next comparison. */
export async function pushFile(t: SyncTarget, local: LocalTree, rel: string): Promise<void> {
  const entry = local.get(rel);
  if (entry?.type !== 'file') return;
  let info;
  try {
    info = await uploadFile(
      t.files,
      localPathOf(t.localRoot, rel),
      remotePathOf(t.remoteRoot, rel),
      entry.size,
    );
  } catch (err) {
    // Deleted between the scan and the upload: the next scan sees it gone.
    if (isFsCode(err, 'ENOENT')) return;
    throw err;
  }
  t.manifest.record(rel, entry, info.mtime);
  t.report.record({ action: 'upload', path: rel, bytes: info.size });
}

export async function removeRemote(t: SyncTarget, rel: string, isDir: boolean): Promise<void> {
  await t.files.remove(remotePathOf(t.remoteRoot, rel), { recursive: isDir });
  t.manifest.forget(rel);
  t.report.record({ action: 'delete', path: isDir ? `${rel}/` : rel });
}

export async function makeRemoteDir(t: SyncTarget, rel: string): Promise<void> {
  await t.files.mkdir(remotePathOf(t.remoteRoot, rel), { parents: true });
  t.report.record({ action: 'mkdir', path: `${rel}/` });
}

/** The sync root did not exist (the workspace itself always does): made with its parents. */
async function createRoot(t: SyncTarget): Promise<RemoteTree> {
  await t.files.mkdir(t.remoteRoot, { parents: true });
  return new Map();
}
