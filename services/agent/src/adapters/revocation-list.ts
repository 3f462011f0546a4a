import { readFileSync, statSync, watch, type FSWatcher } from 'node:fs';

const readUtf8 = (file: string): string => readFileSync(file, 'utf8');
import path from 'node:path';

/**
 * The revocation list a provider writes next to the key file (docs/security.md#revocation):
 * `{"version":1,"not_before"?:<unix s>,"jtis":{"<jti>":<exp unix s>}}`, replaced atomically
 * (write + rename). A token is refused when its `jti` is listed or its `iat` < `not_before`.
 */
export interface RevocationList {
  isRevoked(claims: { readonly jti: string; readonly iat: number }): boolean;
  /** Unix seconds; tokens issued before are refused. 0 when none was set. */
  readonly notBefore: number;
  /**
   * Looks at the file now (one stat; read only when it changed). The authenticator calls it
   * before every verification, so the request after a revocation is refused, never a later one.
   */
  refresh(): void;
  /** Runs after every change of the list; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
  close(): void;
}

/** The agent without a key file has nothing to watch: nothing is ever revoked. */
export function emptyRevocationList(): RevocationList {
  return {
    isRevoked: () => false,
    notBefore: 0,
    refresh: () => {},
    onChange: () => () => {},
    close: () => {},
  };
}

export interface RevocationFileOptions {
  readonly path: string;
  /** The fallback poll when fs.watch misses an event (network file systems, some mounts). */
  readonly pollMs?: number;
  readonly onError?: (err: unknown) => void;
  /** How the file is read (a split agent reads its own files as itself: agent-identity.ts). */
  readonly read?: (file: string) => string;
}

interface Parsed {
  readonly notBefore: number;
  readonly jtis: ReadonlyMap<string, number>;
}

const EMPTY: Parsed = { notBefore: 0, jtis: new Map() };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Throws on anything but the documented shape: a bad file keeps the last good list. */
export function parseRevocationList(text: string): Parsed {
  const data: unknown = JSON.parse(text);
  if (!isRecord(data) || data['version'] !== 1 || !isRecord(data['jtis']))
    throw new Error('revocation list: expected {"version":1,"jtis":{…}}');
  const notBefore = data['not_before'] ?? 0;
  if (typeof notBefore !== 'number' || !Number.isSafeInteger(notBefore) || notBefore < 0)
    throw new Error('revocation list: not_before must be whole Unix seconds');
  const jtis = new Map<string, number>();
  for (const [jti, exp] of Object.entries(data['jtis'])) {
    if (typeof exp !== 'number') throw new Error(`revocation list: expiry of ${jti} is not a number`);
    jtis.set(jti, exp);
  }
  return { notBefore, jtis };
}

/**
 * The list read from a file, re-read when it changes: fs.watch on its directory (a rename
 * replaces the inode a file watch would follow) plus a poll of its stat as the fallback,
 * so a change is applied within `pollMs` (250 ms by default) at worst. A file missing from
 * the start is an empty list; one that disappears later leaves the last list in force.
 */
export function fileRevocationList(options: RevocationFileOptions): RevocationList {
  const listeners = new Set<() => void>();
  let signature = '';
  let list: Parsed = EMPTY;

  function reload(): void {
    const stat = statSync(options.path, { throwIfNoEntry: false });
    const next = stat === undefined ? 'missing' : `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
    if (next === signature) return;
    // Revocations only grow: a list that vanishes is being replaced (Docker's archive upload
    // deletes before it writes), never withdrawn. Its last entries hold until the new one lands.
    if (stat === undefined && signature !== '' && signature !== 'missing') return;
    try {
      list = stat === undefined ? EMPTY : parseRevocationList((options.read ?? readUtf8)(options.path));
      signature = next;
    } catch (err) {
      // Half-written or bad: the last good list stays; the next change is read again.
      options.onError?.(err);
      return;
    }
    for (const listener of listeners) listener();
  }

  reload();
  const poll = setInterval(reload, options.pollMs ?? 250);
  poll.unref();
  let watcher: FSWatcher | undefined;
  try {
    const base = path.basename(options.path);
    watcher = watch(path.dirname(options.path), { persistent: false }, (_event, name) => {
      if (name === null || name === base) reload();
    });
    watcher.on('error', (err) => options.onError?.(err));
  } catch (err) {
    options.onError?.(err); // the poll still covers it
  }

  return {
    isRevoked(claims) {
      // Entries carry their token's exp only so writers can prune them: a listed jti is refused.
      return claims.iat < list.notBefore || list.jtis.has(claims.jti);
    },
    get notBefore() {
      return list.notBefore;
    },
    refresh: reload,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      clearInterval(poll);
      watcher?.close();
    },
  };
}
