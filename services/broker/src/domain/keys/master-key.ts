// The broker's master key: every sandbox signing key (and every stored
// idempotent response) is encrypted under it. Brokers sharing a database must
// share it, so with DATABASE_URL it comes from BROKER_MASTER_KEY; in embedded
// mode it is generated once into <dataDir>/master.key (file 0600, directory
// 0700) and reused at every later start.
import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '@sbx/service-kit';
import { SbxError } from '@sbx/protocol';

export const MASTER_KEY_FILE = 'master.key';
const MIN_MATERIAL_BYTES = 32;
const KEY_TEXT = /^[A-Za-z0-9_-]+$/;

/** A 256-bit AES key derived from the configured material; never printed. */
export class MasterKey {
  readonly #key: Buffer;
  /** A short, non-secret fingerprint for logs: which key is in use, not what it is. */
  readonly fingerprint: string;

  private constructor(key: Buffer) {
    this.#key = key;
    this.fingerprint = createHash('sha256').update(key).digest('base64url').slice(0, 12);
  }

  /** Base64url text of at least 32 bytes (BROKER_MASTER_KEY or the key file's content). */
  static fromText(text: string): MasterKey {
    const trimmed = text.trim();
    const material = KEY_TEXT.test(trimmed) ? Buffer.from(trimmed, 'base64url') : Buffer.alloc(0);
    if (material.length < MIN_MATERIAL_BYTES) {
      throw new SbxError(
        'INTERNAL',
        `master key must be unpadded base64url of at least ${MIN_MATERIAL_BYTES} bytes`,
      );
    }
    // HKDF makes any accepted length a uniform AES-256 key.
    const key = Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), 'sbx-broker master key v1', 32));
    return new MasterKey(key);
  }

  /** For the key vault only. */
  get bytes(): Buffer {
    return this.#key;
  }

  toJSON(): string {
    return '[MasterKey]';
  }
}

export interface MasterKeySource {
  /** BROKER_MASTER_KEY, when configured. */
  readonly masterKey?: string | undefined;
  /** Where the embedded key file lives when no key is configured. */
  readonly dataDir: string;
}

export async function loadMasterKey(source: MasterKeySource): Promise<MasterKey> {
  if (source.masterKey !== undefined && source.masterKey !== '') return MasterKey.fromText(source.masterKey);
  return MasterKey.fromText(await readOrCreateKeyFile(source.dataDir));
}

async function readOrCreateKeyFile(dataDir: string): Promise<string> {
  const file = path.join(dataDir, MASTER_KEY_FILE);
  const existing = await readKeyFile(file);
  if (existing !== undefined) return existing;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700);
  // Written aside, then hard-linked into place: link fails if another broker
  // won the race, and nobody ever reads a half-written key.
  const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(partial, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    await link(partial, file).catch((err: unknown) => {
      if (!isErrno(err, 'EEXIST')) throw err;
    });
  } finally {
    await rm(partial, { force: true });
  }
  const written = await readKeyFile(file);
  if (written === undefined) throw new SbxError('INTERNAL', `cannot create the master key file ${file}`);
  return written;
}

async function readKeyFile(file: string): Promise<string | undefined> {
  let mode: number;
  try {
    mode = (await stat(file)).mode;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
  // Like ssh with a private key: a key others can read is refused, not used.
  if ((mode & 0o077) !== 0) {
    throw new SbxError(
      'INTERNAL',
      `master key file ${file} is readable by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`,
    );
  }
  return readFile(file, 'utf8');
}
