import { readFileSync, statSync } from 'node:fs';
import { SigningKey } from '@sbx/tokens';

export interface KeySet {
  /** Current key first, then the previous one while its grace lasts. */
  readonly keys: readonly SigningKey[];
  /** Changes whenever `keys` does, so verifiers and caches know to rebuild. */
  readonly version: number;
}

export interface KeySource {
  current(): KeySet;
  /**
   * Re-reads the key now and forgets every previous key, grace or not: a sandbox-wide
   * revocation rotated the key because the old one may have leaked (docs/security.md#revocation).
   */
  retire?(): void;
}

/** A key given inline never changes. */
export function staticKeySource(base64url: string): KeySource {
  const set: KeySet = { keys: [SigningKey.fromBase64url(base64url)], version: 1 };
  return { current: () => set };
}

export interface KeyFileOptions {
  readonly path: string;
  readonly graceMs: number;
  readonly now: () => number;
  /** How often, at most, the file's mtime is looked at (stat is cheap, but not free). */
  readonly checkIntervalMs?: number;
  readonly onRotate?: (event: { readonly version: number }) => void;
  readonly onError?: (err: unknown) => void;
  /** How the file is read (a split agent reads its own files as itself: agent-identity.ts). */
  readonly read?: (file: string) => string;
}

/**
 * A key read from a file (a secrets mount) and re-read when the file changes, so a
 * rotated key takes effect without a restart. The previous key stays valid for a
 * short grace, covering tokens minted just before the rotation. Checked lazily on
 * use: no timers to leak. A missing or short key at start throws (the agent refuses to start).
 */
export function fileKeySource(options: KeyFileOptions): KeySource {
  const interval = options.checkIntervalMs ?? 1000;
  const read = options.read ?? ((file: string) => readFileSync(file, 'utf8'));
  let mtimeMs = statSync(options.path).mtimeMs;
  let current = SigningKey.fromBase64url(read(options.path));
  let previous: { key: SigningKey; until: number } | undefined;
  let checkedAt = options.now();
  let set: KeySet = { keys: [current], version: 1 };

  function publish(): void {
    set = { keys: previous === undefined ? [current] : [current, previous.key], version: set.version + 1 };
  }

  function reloadIfChanged(now: number): void {
    const stat = statSync(options.path, { throwIfNoEntry: false });
    if (stat === undefined || stat.mtimeMs === mtimeMs) return;
    const next = SigningKey.fromBase64url(read(options.path));
    mtimeMs = stat.mtimeMs;
    if (next.keyObject.equals(current.keyObject)) return;
    previous = { key: current, until: now + options.graceMs };
    current = next;
    publish();
    options.onRotate?.({ version: set.version });
  }

  return {
    retire(): void {
      const now = options.now();
      checkedAt = now;
      mtimeMs = Number.NaN; // read it whatever its mtime says: a rename in the same tick keeps it
      try {
        reloadIfChanged(now);
      } catch (err) {
        options.onError?.(err);
      }
      previous = undefined;
      publish();
    },
    current(): KeySet {
      const now = options.now();
      if (previous !== undefined && now >= previous.until) {
        previous = undefined;
        publish();
      }
      if (now - checkedAt >= interval) {
        checkedAt = now;
        try {
          reloadIfChanged(now);
        } catch (err) {
          // A half-written or bad key file keeps the last good key rather than locking everyone out.
          options.onError?.(err);
        }
      }
      return set;
    },
  };
}
