// Encryption at rest under the master key: AES-256-GCM, stored as
// iv (12) | tag (16) | ciphertext. Every ciphertext is bound to what it belongs
// to through the additional data (the sandbox id, the idempotency key), so a
// row copied onto another sandbox does not decrypt. Decrypted sandbox keys are
// cached per sandbox: minting a token must not cost a decryption each time.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { SbxError } from '@sbx/protocol';
import { SigningKey } from '@sbx/tokens';
import type { MasterKey } from './master-key.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const DEFAULT_CACHE_ENTRIES = 10_000;

export class KeyVault {
  readonly #master: MasterKey;
  readonly #cache = new Map<string, SigningKey>();
  readonly #maxEntries: number;

  constructor(master: MasterKey, options: { readonly cacheEntries?: number } = {}) {
    this.#master = master;
    this.#maxEntries = options.cacheEntries ?? DEFAULT_CACHE_ENTRIES;
  }

  /** Encrypts `data`, bound to `context`. */
  seal(data: Uint8Array, context: string): Uint8Array<ArrayBuffer> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#master.bytes, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(data), cipher.final()]);
    const out = new Uint8Array(IV_BYTES + TAG_BYTES + body.length);
    out.set(iv, 0);
    out.set(cipher.getAuthTag(), IV_BYTES);
    out.set(body, IV_BYTES + TAG_BYTES);
    return out;
  }

  /** Decrypts what `seal` produced for the same context; INTERNAL when it was not. */
  open(sealed: Uint8Array, context: string): Buffer {
    if (sealed.byteLength < IV_BYTES + TAG_BYTES) throw undecryptable(context);
    const bytes = Buffer.from(sealed);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#master.bytes, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch (err) {
      throw undecryptable(context, err);
    }
  }

  /** The stored form of a new sandbox's signing key; the key is also cached. */
  sealSigningKey(sandboxId: string, key: SigningKey): Uint8Array<ArrayBuffer> {
    const sealed = this.seal(key.keyObject.export(), signingKeyContext(sandboxId));
    this.#remember(sandboxId, key);
    return sealed;
  }

  /** A sandbox's signing key from its stored ciphertext (cached after the first call). */
  openSigningKey(sandboxId: string, sealed: Uint8Array): SigningKey {
    const cached = this.#cache.get(sandboxId);
    if (cached !== undefined) return cached;
    const key = SigningKey.fromBytes(this.open(sealed, signingKeyContext(sandboxId)));
    this.#remember(sandboxId, key);
    return key;
  }

  /** Drops a sandbox's cached key (it terminated). */
  forget(sandboxId: string): void {
    this.#cache.delete(sandboxId);
  }

  /** Drops every cached key: rotations may have been announced while this instance could not hear. */
  forgetAll(): void {
    this.#cache.clear();
  }

  #remember(sandboxId: string, key: SigningKey): void {
    this.#cache.delete(sandboxId);
    while (this.#cache.size >= this.#maxEntries) {
      const oldest = this.#cache.keys().next();
      if (oldest.done === true) break;
      this.#cache.delete(oldest.value);
    }
    this.#cache.set(sandboxId, key);
  }
}

function signingKeyContext(sandboxId: string): string {
  return `sandbox-signing-key:${sandboxId}`;
}

function undecryptable(context: string, cause?: unknown): SbxError {
  // A wrong master key is the usual reason: brokers on one database must share it.
  return new SbxError('INTERNAL', `stored secret for ${context} does not decrypt under this master key`, {
    cause,
  });
}
