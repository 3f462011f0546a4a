import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chmod, chown, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { SigningKey } from '@sbx/tokens';
import { asUser, isErrno } from '@sbx/service-kit';
import { sandboxNotFound } from './provider.js';
import { REVOCATION_FILE } from './revocation-file.js';
import { SandboxLimits } from './sandbox-limits.js';

/**
 * Where a local sandbox lives on disk:
 *   <dataDir>/workspaces/<id>          the workspace (kept by stop, removed by destroy)
 *   <dataDir>/sandboxes/<id>/agent.key the signing key the agent reads (0640, directory 0750,
 *                                      group: the sandbox's user; the agent reads it through a
 *                                      descriptor, no path to it exists in its view)
 *   <dataDir>/sandboxes/<id>/sandbox.json what `start` needs to resume after a broker restart
 *   <dataDir>/sandboxes/<id>/sandbox-env.json the client policy's variables for user processes
 */
export interface SandboxPaths {
  readonly workspace: string;
  readonly stateDir: string;
  readonly keyFile: string;
  readonly recordFile: string;
  /** AGENT_SANDBOX_ENV_FILE: the creating client's variables (an empty object without a client). */
  readonly envFile: string;
  /** The workspace's volume image, where the host allows one (workspace-volumes.ts). */
  readonly volumeFile: string;
}

const run = promisify(execFile);

/** What is remembered about a sandbox between agent runs (no key material). */
const SandboxRecord = z.object({
  sandboxId: z.string(),
  tenantId: z.string(),
  tokenIssuer: z.string(),
  network: z.enum(['on', 'off']),
  /** The host user its processes run as (a root broker gives every sandbox its own). */
  hostUid: z.number().int().positive().optional(),
  limits: SandboxLimits.optional(),
  /** The creating client's variables (docs/protocol.md#callers-and-caller-scopes), written to `envFile`. */
  environment: z.record(z.string(), z.string()).optional(),
  /** Its workspace is a volume image (workspace-volumes.ts): resuming without the image must fail. */
  volume: z.boolean().optional(),
});
export type SandboxRecord = z.infer<typeof SandboxRecord>;

export function sandboxPaths(dataDir: string, sandboxId: string): SandboxPaths {
  const stateDir = path.join(dataDir, 'sandboxes', sandboxId);
  return {
    workspace: path.join(dataDir, 'workspaces', sandboxId),
    stateDir,
    keyFile: path.join(stateDir, 'agent.key'),
    recordFile: path.join(stateDir, 'sandbox.json'),
    envFile: path.join(stateDir, 'sandbox-env.json'),
    volumeFile: path.join(stateDir, 'workspace.img'),
  };
}

/** Creates the key file, the record and the workspace; fails if the sandbox's state dir exists. */
export async function writeSandboxFiles(
  paths: SandboxPaths,
  record: SandboxRecord,
  key: SigningKey,
): Promise<void> {
  // Traversable, not listable: each state directory keeps its own sandbox user's group.
  await traversableDir(path.dirname(paths.stateDir));
  await traversableDir(path.dirname(paths.workspace));
  await mkdir(paths.stateDir, { mode: 0o750 });
  await writeFile(paths.keyFile, key.toBase64url(), { mode: 0o640, flag: 'wx' });
  await writeFile(paths.recordFile, JSON.stringify(record), { mode: 0o600, flag: 'wx' });
  await writeFile(paths.envFile, JSON.stringify(record.environment ?? {}), { mode: 0o640, flag: 'wx' });
  await mkdir(paths.workspace, { recursive: true, mode: 0o700 });
  await shareStateWith(paths, record.hostUid);
  if (record.hostUid !== undefined) await chown(paths.workspace, record.hostUid, record.hostUid);
}

/**
 * The agent runs as the sandbox's own user and reads its key, revocation list and client
 * variables through a descriptor of the state directory: their group is that user's,
 * readable, never writable; the record and the volume image stay root's alone. Applied at
 * every start too, so a sandbox made before this rule resumes.
 */
export async function shareStateWith(paths: SandboxPaths, hostUid: number | undefined): Promise<void> {
  const shared = [paths.keyFile, paths.envFile, path.join(paths.stateDir, REVOCATION_FILE)];
  await chmod(paths.stateDir, 0o750);
  if (hostUid !== undefined) await chown(paths.stateDir, 0, hostUid);
  for (const file of shared) {
    if ((await stat(file).catch(() => undefined)) === undefined) continue;
    await chmod(file, 0o640);
    if (hostUid !== undefined) await chown(file, 0, hostUid);
  }
}

/**
 * bubblewrap runs as the sandbox's user and must walk down to its workspace: the
 * directories above it may be crossed (x) but not listed; each workspace is its
 * user's alone (0700), and everything else in the data directory stays 0700/0600.
 */
export async function traversableDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o711 });
  await chmod(dir, 0o711);
  await chmod(path.dirname(dir), 0o711);
}

/** The host uids recorded by every sandbox of this data directory. */
export async function recordedHostUids(dataDir: string): Promise<Set<number>> {
  const dir = path.join(dataDir, 'sandboxes');
  const ids = await readdir(dir).catch((): string[] => []);
  const records = await Promise.all(
    ids.map((id) => readSandboxRecord(sandboxPaths(dataDir, id)).catch(() => undefined)),
  );
  return new Set(records.flatMap((record) => (record?.hostUid === undefined ? [] : [record.hostUid])));
}

/** Every sandbox with files in this data directory (state or workspace), whatever its record says. */
export async function sandboxIdsIn(dataDir: string): Promise<string[]> {
  const [states, workspaces] = await Promise.all(
    ['sandboxes', 'workspaces'].map((dir) => readdir(path.join(dataDir, dir)).catch((): string[] => [])),
  );
  return [...new Set([...(states ?? []), ...(workspaces ?? [])])].toSorted();
}

/** The record of a sandbox created earlier, or undefined when there is none. */
export async function readSandboxRecord(paths: SandboxPaths): Promise<SandboxRecord | undefined> {
  const text = await readFile(paths.recordFile, 'utf8').catch((err: unknown) => {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  });
  return text === undefined ? undefined : SandboxRecord.parse(JSON.parse(text));
}

export async function sandboxFilesExist(paths: SandboxPaths): Promise<boolean> {
  const found = await Promise.all(
    [paths.stateDir, paths.workspace].map((p) => stat(p).catch(() => undefined)),
  );
  return found.some((entry) => entry !== undefined);
}

/**
 * Deletes a sandbox's files. What is in the workspace is the sandbox user's: a root
 * broker deletes it as that user, so that even a process that outlived the sweep and
 * swaps a directory for a symlink mid-delete removes nothing its sandbox could not.
 */
export async function removeSandboxFiles(paths: SandboxPaths, hostUid?: number): Promise<void> {
  if (hostUid !== undefined) {
    const rmAsUser = asUser(
      { uid: hostUid, gid: hostUid },
      {
        file: '/bin/rm',
        args: ['-rf', '--one-file-system', '--', paths.workspace],
      },
    );
    // The workspace itself stays (its parent is root's): removed below, empty by then.
    await run(rmAsUser.file, [...rmAsUser.args]).catch(() => undefined);
  }
  await rm(paths.workspace, { recursive: true, force: true });
  await rm(paths.stateDir, { recursive: true, force: true });
}

/** The paths of a sandbox this provider made (its record exists); SANDBOX_NOT_FOUND otherwise. */
export async function existingSandboxPaths(dataDir: string, sandboxId: string): Promise<SandboxPaths> {
  const paths = sandboxPaths(dataDir, sandboxId);
  if ((await readSandboxRecord(paths).catch(() => undefined)) === undefined) throw sandboxNotFound(sandboxId);
  return paths;
}
