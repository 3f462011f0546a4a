// The files a local agent watches for revocation (docs/security.md#revocation), next to its
// key: `agent.key` and `revocations.json`, each replaced by write-aside and rename so the
// agent never reads half a file.
import { randomBytes } from 'node:crypto';
import { chown, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '@sbx/service-kit';
import { z } from 'zod';
import type { SigningKey } from '@sbx/tokens';
import type { Revocation } from './provider.js';

export const REVOCATION_FILE = 'revocations.json';

const RevocationFile = z.object({
  version: z.literal(1),
  not_before: z.number().int().nonnegative().optional(),
  /** jti → its token's exp (Unix seconds). */
  jtis: z.record(z.string(), z.number()),
});
type RevocationFile = z.infer<typeof RevocationFile>;

/**
 * Replaces `file` whole: readable by its owner and the group of its directory (the
 * sandbox's own user for a root broker: its agent reads the state directory through a
 * descriptor, docs/architecture.md D21), never by others, never writable by the agent.
 */
export async function replaceFile(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  const scratch = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString('hex')}`);
  try {
    const { gid } = await stat(dir);
    await writeFile(scratch, text, { mode: 0o640, flag: 'wx' });
    if (process.getuid?.() === 0) await chown(scratch, 0, gid);
    await rename(scratch, file);
  } catch (err) {
    await rm(scratch, { force: true });
    throw err;
  }
}

async function readList(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch((err: unknown) => {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  });
}

/**
 * The list `current` (undefined: none yet) with `revocation` merged in, as text: entries whose
 * token has expired are dropped (the list stays as small as the tokens still alive),
 * `not_before` only moves forward. A list that does not parse throws rather than being lost.
 * Every provider writes its agents' lists with this (a file here, a Secret key, an archive).
 */
export function mergeRevocationList(
  current: string | undefined,
  revocation: Revocation,
  nowMs: number,
): string {
  const list: RevocationFile =
    current === undefined ? { version: 1, jtis: {} } : RevocationFile.parse(JSON.parse(current));
  const nowSeconds = Math.floor(nowMs / 1000);
  const jtis: Record<string, number> = {};
  for (const [jti, exp] of Object.entries(list.jtis)) if (exp >= nowSeconds) jtis[jti] = exp;
  for (const entry of revocation.jtis) {
    const exp = Math.ceil(entry.expiresAt.getTime() / 1000);
    if (exp >= nowSeconds) jtis[entry.jti] = exp;
  }
  const requested =
    revocation.notBefore === undefined ? 0 : Math.floor(revocation.notBefore.getTime() / 1000);
  const notBefore = Math.max(list.not_before ?? 0, requested);
  const next: RevocationFile = { version: 1, ...(notBefore === 0 ? {} : { not_before: notBefore }), jtis };
  return JSON.stringify(next);
}

/** Merges `revocation` into the list in `stateDir` (mergeRevocationList) and replaces the file. */
export async function addRevocations(stateDir: string, revocation: Revocation, nowMs: number): Promise<void> {
  const file = path.join(stateDir, REVOCATION_FILE);
  await replaceFile(file, mergeRevocationList(await readList(file), revocation, nowMs));
}

/** Replaces the key file the agent reads (0640 to the agent's group, like the first one). */
export async function replaceKeyFile(keyFile: string, key: SigningKey): Promise<void> {
  await replaceFile(keyFile, key.toBase64url());
}
