import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LocalEntry } from './local-tree.js';
import type { RemoteEntry } from './remote-tree.js';

/** What both sides looked like right after a file was last copied, in either direction. */
export interface ManifestEntry {
  readonly size: number;
  readonly local_mtime_ms: number;
  readonly remote_mtime: string;
}

/** One pair of roots a manifest belongs to; another sandbox (a new one for the thread) starts afresh. */
export interface SyncPair {
  readonly sandboxId: string;
  readonly remoteRoot: string;
  readonly localRoot: string;
}

interface ManifestFile {
  readonly sandbox_id: string;
  readonly remote_root: string;
  readonly local_root: string;
  readonly files: Record<string, ManifestEntry>;
}

/**
 * The sync manifest under `$SBX_HOME/sync/`: the agent stamps every upload with its own
 * write time, so the local and remote mtimes of a pushed file never agree. A file counts as
 * in sync when both sides still look exactly as they did after its last copy.
 * It is a cache: a missing or unreadable manifest only means files are copied again.
 */
export class SyncManifest {
  readonly #files = new Map<string, ManifestEntry>();

  private constructor(
    private readonly file: string,
    private readonly pair: SyncPair,
  ) {}

  static load(home: string, pair: SyncPair): SyncManifest {
    const key = createHash('sha256')
      .update(`${pair.sandboxId}\0${pair.remoteRoot}\0${pair.localRoot}`)
      .digest('hex')
      .slice(0, 32);
    const manifest = new SyncManifest(path.join(home, 'sync', `${key}.json`), pair);
    for (const [rel, entry] of Object.entries(readManifest(manifest.file)?.files ?? {})) {
      manifest.#files.set(rel, entry);
    }
    return manifest;
  }

  /** Both sides unchanged since the last copy. */
  inSync(rel: string, local: LocalEntry, remote: RemoteEntry): boolean {
    const known = this.#files.get(rel);
    return (
      known !== undefined &&
      known.size === local.size &&
      known.local_mtime_ms === local.mtimeMs &&
      known.size === remote.size &&
      known.remote_mtime === remote.mtime
    );
  }

  record(rel: string, local: LocalEntry, remoteMtime: string): void {
    this.#files.set(rel, { size: local.size, local_mtime_ms: local.mtimeMs, remote_mtime: remoteMtime });
  }

  /** Forgets `rel` and, for a directory, everything below it. */
  forget(rel: string): void {
    for (const known of this.#files.keys()) {
      if (known === rel || known.startsWith(`${rel}/`)) this.#files.delete(known);
    }
  }

  /** Drops every entry but those of `kept` (files gone from the synced side). */
  retain(kept: ReadonlySet<string>): void {
    for (const rel of this.#files.keys()) if (!kept.has(rel)) this.#files.delete(rel);
  }

  /** Atomic (temp file + rename), 0600 in a 0700 directory, as the CLI's other files. */
  save(): void {
    const dir = path.dirname(this.file);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const body: ManifestFile = {
      sandbox_id: this.pair.sandboxId,
      remote_root: this.pair.remoteRoot,
      local_root: this.pair.localRoot,
      files: Object.fromEntries(this.#files),
    };
    const temp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify(body)}\n`, { mode: 0o600 });
    renameSync(temp, this.file);
  }
}

function readManifest(file: string): ManifestFile | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return isManifestFile(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function isManifestFile(value: unknown): value is ManifestFile {
  return (
    typeof value === 'object' &&
    value !== null &&
    'files' in value &&
    typeof value.files === 'object' &&
    value.files !== null
  );
}
