// One signing key per sandbox, generated at creation, handed to the provider,
// stored only as AES-256-GCM ciphertext under the master key; tokens for one
// sandbox never verify on another. The embedded master key file is 0600.
import { randomBytes, randomUUID } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { SessionResponse } from '@sbx/protocol';
import { createVerifier } from '@sbx/tokens';
import { KeyVault } from '../../src/domain/keys/key-vault.js';
import { loadMasterKey, MASTER_KEY_FILE, MasterKey } from '../../src/domain/keys/master-key.js';
import { bearer, randomMasterKey } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

describeEachBackend('sandbox keys and tokens', (backend) => {
  const broker = useBroker(backend);
  const db = () => broker.database;
  let a: SessionResponse;
  let b: SessionResponse;

  beforeAll(async () => {
    const key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
    const ensure = async () =>
      SessionResponse.parse(
        (
          await request(broker.url)
            .post('/v1/sandbox/sessions')
            .set(bearer(key))
            .send({ thread_id: `thr_${randomUUID()}`, mode: 'ensure' })
        ).body,
      );
    a = await ensure();
    b = await ensure();
  });

  const keyOf = (session: SessionResponse) => broker.provider.specOf(session.binding.sandbox_id)!.signingKey;
  const verify = (token: string, keySession: SessionResponse, audience: string) =>
    createVerifier({ keys: keyOf(keySession), issuer: 'sbx-broker', audience, maxTtlSeconds: 900 }).verify(
      token,
    );

  it("verifies a token with its own sandbox's key only", () => {
    expect(verify(a.token, a, a.sandbox.id).claims.aud).toBe(a.sandbox.id);
    expect(() => verify(a.token, b, a.sandbox.id)).toThrow(
      expect.objectContaining({ reason: 'bad_signature' }),
    );
    expect(() => verify(a.token, b, b.sandbox.id)).toThrow(
      expect.objectContaining({ code: 'UNAUTHENTICATED' }),
    );
    expect(keyOf(a).toBase64url()).not.toBe(keyOf(b).toBase64url());
  });

  it('stores each key as ciphertext that only this master key and this sandbox open', async () => {
    const row = await db().prisma.sandbox.findUniqueOrThrow({ where: { id: a.sandbox.id } });
    const raw = Buffer.from(keyOf(a).toBase64url(), 'base64url');
    const stored = Buffer.from(row.signingKeyCipher);
    expect(stored.length).toBe(12 + 16 + raw.length);
    expect(stored.includes(raw)).toBe(false);
    expect(new KeyVault(broker.masterKey).open(stored, `sandbox-signing-key:${a.sandbox.id}`)).toEqual(raw);
    expect(() => new KeyVault(randomMasterKey()).open(stored, `sandbox-signing-key:${a.sandbox.id}`)).toThrow(
      expect.objectContaining({ code: 'INTERNAL' }),
    );
    expect(() => new KeyVault(broker.masterKey).open(stored, `sandbox-signing-key:${b.sandbox.id}`)).toThrow(
      /does not decrypt/,
    );
  });

  it('records every issued token by jti with its subject, audience and scopes', async () => {
    const { jti } = verify(a.token, a, a.sandbox.id).claims;
    const issuance = await db().prisma.tokenIssuance.findUniqueOrThrow({ where: { jti } });
    expect(issuance).toMatchObject({
      audience: a.sandbox.id,
      sessionId: a.session_id,
      threadId: a.thread_id,
      scopes: a.credentials.granted_capabilities,
    });
    expect(issuance.expiresAt.toISOString()).toBe(new Date(a.expires_at).toISOString());
  });
});

describe('master key', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sbx-master-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('is generated once into <dataDir>/master.key (0600, directory 0700) and reused', async () => {
    const dataDir = path.join(dir, 'data');
    const first = await loadMasterKey({ dataDir });
    expect((await stat(path.join(dataDir, MASTER_KEY_FILE))).mode & 0o777).toBe(0o600);
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    const again = await loadMasterKey({ dataDir });
    expect(again.fingerprint).toBe(first.fingerprint);
    // What one broker sealed, the restarted broker opens.
    const sealed = new KeyVault(first).seal(Buffer.from('secret'), 'ctx');
    expect(new KeyVault(again).open(sealed, 'ctx').toString()).toBe('secret');
    expect(JSON.stringify({ key: first })).not.toContain(
      (await readFile(path.join(dataDir, MASTER_KEY_FILE), 'utf8')).trim(),
    );
  });

  it('prefers BROKER_MASTER_KEY, and refuses short keys and key files others can read', async () => {
    const text = randomBytes(32).toString('base64url');
    const configured = await loadMasterKey({ masterKey: text, dataDir: path.join(dir, 'unused') });
    expect(configured.fingerprint).toBe(MasterKey.fromText(text).fingerprint);
    await expect(stat(path.join(dir, 'unused'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(() => MasterKey.fromText(randomBytes(16).toString('base64url'))).toThrow(/at least 32 bytes/);
    const loose = path.join(dir, 'loose');
    await loadMasterKey({ dataDir: loose });
    await chmod(path.join(loose, MASTER_KEY_FILE), 0o644);
    await expect(loadMasterKey({ dataDir: loose })).rejects.toThrow(/readable by others/);
  });
});
