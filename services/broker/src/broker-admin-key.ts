// The admin key a broker on embedded defaults generates on its first start
// (domain/auth/bootstrap.ts), as main.ts hands it to the operator: made only once the
// broker listens, printed at once, and withdrawn when it could not be printed.
//
// Why made last rather than cleaned up after a failed start: a start can fail for a long
// time before it listens (half a minute of migrations, a port taken meanwhile, a provider
// that does not open, Ctrl-C), and a clean-up is skipped by whatever kills the process.
// Made after all of that, only the marker's write and the banner's stand between making
// the key and showing it; the marker's write revokes the key when it fails (bootstrap.ts),
// the banner's calls withdraw(). Either way the data directory keeps no key nobody saw, and
// the next start makes and prints one.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import {
  ensureGeneratedAdminKey,
  GENERATED_KEY_MARKER,
  type GeneratedKeyStore,
} from './domain/auth/bootstrap.js';

export interface GeneratedAdminKey {
  /** The secret, for the banner: shown once, stored nowhere in clear. */
  readonly key: string;
  /** For a key that could not be shown: forgets its marker and revokes it. */
  withdraw(): Promise<void>;
}

/** A new admin key on the first start of this data directory; undefined on later starts. */
export async function issueGeneratedAdminKey(
  dataDir: string,
  store: GeneratedKeyStore,
): Promise<GeneratedAdminKey | undefined> {
  const created = await ensureGeneratedAdminKey(dataDir, store);
  if (created === undefined) return undefined;
  return {
    key: created.key,
    async withdraw() {
      // The marker first: without it the next start makes a key whatever the revocation does.
      await rm(path.join(dataDir, GENERATED_KEY_MARKER), { force: true });
      await store.revoke(created.record.id, created.record.tenantId);
    },
  };
}
