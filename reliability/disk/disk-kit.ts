// What the disk suites share: the long-form switch, a broker on a small disk of its own,
// uploads answered raw (status and envelope), hashes, and the broker's own writes.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { BrokerSession, type SandboxClient } from '../../packages/client/src/index.js';
import { startDiskBroker, type DiskBroker } from './disk-broker.js';
import { makeSmallDisk, type SmallDisk } from './small-disk.js';

/** SBX_RELIABILITY=long: the suites' long forms (reliability/README.md). */
export const LONG = process.env['SBX_RELIABILITY'] === 'long';

export const MIB = 1024 * 1024;

/** ext4 keeps its reserved blocks (5 %) for root; this user writes like a sandbox's would. */
export const UNPRIVILEGED_UID = 65_534;

export interface DiskWorld {
  readonly disk: SmallDisk;
  readonly broker: DiskBroker;
  close(): Promise<void>;
}

export interface WorldOptions {
  /** Workspace images allocated whole when made, or sparse (the provider's default). */
  readonly preallocate: boolean;
  /** ext4's bytes per inode: larger means fewer inodes, quicker to use up. */
  readonly bytesPerInode?: number;
}

/**
 * A 384 MiB disk holding the broker's database and data directory; workspaces of 64 MiB;
 * the provider keeps 16 MiB free of workspace promises (room for four sandboxes and PGlite).
 */
export async function startDiskWorld(options: WorldOptions): Promise<DiskWorld> {
  const disk = makeSmallDisk(384, options.bytesPerInode);
  try {
    const broker = await startDiskBroker({
      dataDir: disk.root,
      workspaceMb: 64,
      reserveBytes: 16 * MIB,
      preallocate: options.preallocate,
    });
    return {
      disk,
      broker,
      async close() {
        // The disk goes whatever the broker's close says: no mount outlives the suite.
        try {
          await disk.free();
          await broker.close();
        } finally {
          await disk.close();
        }
      },
    };
  } catch (err) {
    await disk.close();
    throw err;
  }
}

export interface Workspace {
  readonly session: BrokerSession;
  /** Files and exec (an agent actor's binding). */
  readonly sandbox: SandboxClient;
}

export async function openWorkspace(world: DiskWorld, threadId: string): Promise<Workspace> {
  const session = await BrokerSession.ensure(world.broker.client, {
    scope: { type: 'thread', id: threadId },
    actor: { type: 'agent', id: `agt_${threadId}` },
  });
  return {
    session,
    sandbox: session.sandbox({ retry: { maxAttempts: 1, baseDelayMs: 50, maxDelayMs: 50 } }),
  };
}

export function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export function randomFile(bytes: number): Uint8Array {
  return new Uint8Array(randomBytes(bytes));
}

export interface RawAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** `PUT /files/{path}` to the agent, answered raw: the status and the JSON envelope as sent. */
export async function rawUpload(workspace: Workspace, file: string, body: Uint8Array): Promise<RawAnswer> {
  const response = await fetch(`${workspace.session.endpoints.httpBaseUrl}/files/${file}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${await workspace.session.credentials.fresh()}` },
    body,
  });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

/** Upload temporaries left next to `dir`'s files (listings hide them; `ls -A` does not). */
export async function leftoverTemporaries(workspace: Workspace, dir = '.'): Promise<string[]> {
  const listed = await workspace.sandbox.exec.run({ argv: ['ls', '-A', dir] });
  return listed.stdout.split('\n').filter((name) => name.startsWith('.sbx-upload-'));
}

/** A write through the broker's HTTP API into its database: `POST /admin/api-keys`. */
export async function createApiKey(world: DiskWorld, n: number): Promise<RawAnswer> {
  const { harness } = world.broker;
  const response = await fetch(`${harness.url}/admin/api-keys`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${world.broker.adminKey}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      tenant_id: harness.tenantId,
      principal_id: `principal_disk_${n}`,
      principal_type: 'service',
      scopes: ['read:sandbox'],
      name: `disk filler ${n} ${'x'.repeat(80)}`,
    }),
  });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

/** The sandboxes the provider keeps files for (`<data dir>/local/sandboxes/*`). */
export function sandboxDirs(world: DiskWorld): string[] {
  return readdirSync(path.join(world.disk.root, 'local', 'sandboxes')).toSorted();
}

/** The error code of an envelope, if the body is one. */
export function codeOf(answer: RawAnswer): string | undefined {
  const body = answer.body as { error?: { code?: unknown } } | undefined;
  return typeof body?.error?.code === 'string' ? body.error.code : undefined;
}
