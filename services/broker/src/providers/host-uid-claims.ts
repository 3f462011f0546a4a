// A root broker's sandbox users are claimed host-wide, not per data directory. Two brokers
// with data directories of their own on one host (two deployments, parallel test runs) each
// picked uids free in its own directory, so two sandboxes could get one host user: each could
// then signal the other's processes and read its files, and a sweep of one by uid killed the
// other's processes. A claim is a directory named by the uid (mkdir is atomic across
// processes) holding which sandbox of which data directory has it. It lives in /var/lib, not
// /run: a stopped sandbox keeps its uid across reboots.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '@sbx/service-kit';
import { z } from 'zod';

export const DEFAULT_UID_CLAIMS_DIR = '/var/lib/sbx/sandbox-uids';

export interface UidOwner {
  readonly dataDir: string;
  readonly sandboxId: string;
}

const OWNER_FILE = 'owner.json';
const ClaimOwner = z.object({ dataDir: z.string(), sandboxId: z.string() });

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The first of `candidates` no one on this host has claimed, claimed for `owner`. */
export async function claimHostUid(
  claimsDir: string,
  owner: UidOwner,
  candidates: Iterable<number>,
): Promise<number> {
  await mkdir(claimsDir, { recursive: true, mode: 0o700 });
  for (const uid of candidates) {
    const claim = path.join(claimsDir, String(uid));
    try {
      await mkdir(claim, { mode: 0o700 });
    } catch (err) {
      if (isErrno(err, 'EEXIST')) continue;
      throw err;
    }
    try {
      await writeFile(path.join(claim, OWNER_FILE), JSON.stringify(owner), { mode: 0o600 });
    } catch (err) {
      await rm(claim, { recursive: true, force: true });
      throw err;
    }
    return uid;
  }
  throw new Error('every sandbox uid is claimed on this host');
}

/** Gives `uid` back, when `owner` holds it (never another data directory's claim). */
export async function releaseHostUid(claimsDir: string, uid: number, owner: UidOwner): Promise<void> {
  const claim = path.join(claimsDir, String(uid));
  const text = await readFile(path.join(claim, OWNER_FILE), 'utf8').catch(() => undefined);
  if (text === undefined) return;
  // A claim that cannot be read is no one's this broker can prove: kept.
  const holder = ClaimOwner.safeParse(parseJson(text));
  if (holder.success && holder.data.dataDir === owner.dataDir && holder.data.sandboxId === owner.sandboxId)
    await rm(claim, { recursive: true, force: true });
}
