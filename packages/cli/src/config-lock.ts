import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Held longer than this, the lock was left by a process that died: a holder does one
 * token request at most, which the issuer timeout (15 s) ends well before.
 */
const STALE_LOCK_MS = 30_000;
const POLL_MS = 50;

/**
 * Runs `work` holding `$SBX_HOME/config.lock`, so that one `sbx` process at a time reads,
 * refreshes and rewrites the login: two processes spending the same rotating refresh token
 * would leave one of them with `invalid_grant` (docs/cli-login.md). An exclusive create
 * (O_EXCL) is the lock; a lock older than STALE_LOCK_MS is taken over. Two waiters taking
 * over the same stale lock at once could both proceed: the refresh's own checks
 * (stored-login.ts) then keep the stored login consistent.
 */
export async function withConfigLock<T>(home: string, work: () => Promise<T>): Promise<T> {
  const file = path.join(home, 'config.lock');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const owner = `${process.pid} ${randomUUID()}`;
  while (!tryCreate(file, owner)) {
    if (isStale(file)) rmSync(file, { force: true });
    else await sleep(POLL_MS + Math.random() * POLL_MS);
  }
  try {
    return await work();
  } finally {
    // Not ours any more only if we were too slow and another process took it over.
    if (readOwner(file) === owner) rmSync(file, { force: true });
  }
}

function tryCreate(file: string, owner: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o600);
  } catch (err) {
    if (fsCode(err) === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, owner);
  } finally {
    closeSync(fd);
  }
  return true;
}

function isStale(file: string): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs > STALE_LOCK_MS;
  } catch (err) {
    if (fsCode(err) === 'ENOENT') return false; // released meanwhile: try again
    throw err;
  }
}

function readOwner(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** Not `instanceof Error`: fs errors may come from another realm (a test's vm context). */
function fsCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}
