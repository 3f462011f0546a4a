// Broker replicas on one host share its data directory, and any of them may stop or destroy a
// sandbox whose agent another one runs as its child. The replica that ends it leaves this mark
// in the sandbox's state directory before the kill, so the agent's own broker reads the death
// as asked for and does not restart the agent of a stopped or terminated sandbox (found by
// reliability/load/ensure-race.test.ts). Root's directory: sandbox users cannot write it.
import { rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '@sbx/service-kit';
import type { SandboxPaths } from './sandbox-layout.js';

const ENDED_MARK = 'ended';

function markOf(paths: Pick<SandboxPaths, 'stateDir'>): string {
  return path.join(paths.stateDir, ENDED_MARK);
}

/** Before a stop or destroy ends the agent; nothing to mark when the sandbox has no state dir. */
export async function markEnded(paths: Pick<SandboxPaths, 'stateDir'>): Promise<void> {
  await writeFile(markOf(paths), '', { mode: 0o600 }).catch((err: unknown) => {
    if (!isErrno(err, 'ENOENT')) throw err;
  });
}

/** Whether the sandbox was stopped or destroyed since its agent last started (its files gone too). */
export async function wasEnded(paths: Pick<SandboxPaths, 'stateDir'>): Promise<boolean> {
  const [mark, dir] = await Promise.all([
    stat(markOf(paths)).catch(() => undefined),
    stat(paths.stateDir).catch(() => undefined),
  ]);
  return mark !== undefined || dir === undefined;
}

/** An explicit start: the sandbox is wanted again. */
export async function clearEnded(paths: Pick<SandboxPaths, 'stateDir'>): Promise<void> {
  await rm(markOf(paths), { force: true });
}
