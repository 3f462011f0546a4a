import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mintCapabilityToken, SigningKey, TokenError } from '@sbx/tokens';
import { fileKeySource } from '../../src/adapters/key-source.js';
import { createAuthenticator } from '../../src/http/authenticator.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function writeKey(file: string, key: SigningKey, mtimeSeconds: number): void {
  writeFileSync(file, key.toBase64url(), { mode: 0o600 });
  utimesSync(file, mtimeSeconds, mtimeSeconds);
}

describe('signing key from a file', () => {
  it('picks up a rotated key without a restart and keeps the old one for the grace only', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sbx-key-'));
    dirs.push(dir);
    const file = path.join(dir, 'key');
    const oldKey = SigningKey.generate();
    const newKey = SigningKey.generate();
    writeKey(file, oldKey, 1000);
    let now = 1_700_000_000_000;
    const clock = (): number => now;
    const keys = fileKeySource({ path: file, graceMs: 60_000, now: clock, checkIntervalMs: 0 });
    const auth = createAuthenticator({
      keys,
      sandboxId: 'sb_1',
      issuer: 'iss',
      maxTtlSeconds: 3600,
      now: clock,
    });
    const mint = (key: SigningKey): string =>
      mintCapabilityToken({
        key,
        issuer: 'iss',
        subject: 'u',
        sandboxId: 'sb_1',
        scopes: ['fs:ro'],
        ttlSeconds: 600,
        now: clock,
      }).token;

    const oldToken = mint(oldKey);
    expect(auth.authenticate(oldToken).claims.sub).toBe('u');
    expect(() => auth.authenticate(mint(newKey))).toThrow(TokenError);

    writeKey(file, newKey, 2000);
    now += 1000;
    expect(auth.authenticate(mint(newKey)).claims.sub).toBe('u');
    expect(auth.authenticate(oldToken).claims.sub).toBe('u');

    now += 61_000;
    expect(() => auth.authenticate(oldToken)).toThrow(TokenError);
    expect(auth.authenticate(mint(newKey)).claims.sub).toBe('u');
  });

  it('refuses to start on a short key and keeps the last good key when the file turns bad', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sbx-key-'));
    dirs.push(dir);
    const file = path.join(dir, 'key');
    writeFileSync(file, Buffer.alloc(16, 1).toString('base64url'));
    expect(() => fileKeySource({ path: file, graceMs: 0, now: () => 0 })).toThrow(/at least 32/);

    const good = SigningKey.generate();
    writeKey(file, good, 1000);
    const errors: unknown[] = [];
    let now = 0;
    const keys = fileKeySource({
      path: file,
      graceMs: 0,
      now: () => now,
      checkIntervalMs: 0,
      onError: (e) => errors.push(e),
    });
    writeFileSync(file, 'short');
    utimesSync(file, 3000, 3000);
    now += 10;
    expect(keys.current().keys[0]?.keyObject.equals(good.keyObject)).toBe(true);
    expect(errors).toHaveLength(1);
  });
});
