// The revocation list the local provider keeps next to a sandbox's key: merged, pruned
// of expired tokens, `not_before` only moving forward, always replaced whole.
import { afterEach, describe, expect, it } from '@jest/globals';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SigningKey } from '@sbx/tokens';
import { addRevocations, REVOCATION_FILE, replaceKeyFile } from '../../src/providers/revocation-file.js';
import { FakeProvider } from '../../src/providers/fake-provider.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function stateDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sbx-revocations-'));
  // As a root broker makes it: the group is the sandbox user's, whose agent reads the files.
  if (process.getuid?.() === 0) chownSync(dir, 0, 254_321);
  dirs.push(dir);
  return dir;
}
const listIn = (dir: string): unknown => JSON.parse(readFileSync(path.join(dir, REVOCATION_FILE), 'utf8'));

describe('revocation file', () => {
  it('merges entries, drops expired ones, and keeps not_before from moving back', async () => {
    const dir = stateDir();
    const now = 1_800_000_000_000;
    await addRevocations(dir, { jtis: [{ jti: 'tok_a', expiresAt: new Date(now + 60_000) }] }, now);
    await addRevocations(
      dir,
      {
        jtis: [
          { jti: 'tok_b', expiresAt: new Date(now + 120_000) },
          { jti: 'tok_old', expiresAt: new Date(now - 1000) },
        ],
        notBefore: new Date(now),
      },
      now,
    );
    expect(listIn(dir)).toEqual({
      version: 1,
      not_before: now / 1000,
      jtis: { tok_a: now / 1000 + 60, tok_b: now / 1000 + 120 },
    });
    // Later: tok_a expired and leaves the list; an older not_before changes nothing.
    await addRevocations(dir, { jtis: [], notBefore: new Date(now - 10_000) }, now + 90_000);
    expect(listIn(dir)).toEqual({ version: 1, not_before: now / 1000, jtis: { tok_b: now / 1000 + 120 } });
    // Readable by the directory's group (the sandbox user's, whose agent reads it), by nobody else.
    expect(statSync(path.join(dir, REVOCATION_FILE)).mode & 0o777).toBe(0o640);
    expect(statSync(path.join(dir, REVOCATION_FILE)).gid).toBe(statSync(dir).gid);
    expect(readdirSync(dir)).toEqual([REVOCATION_FILE]); // no scratch file left behind
  });

  it('refuses to merge into a list it cannot read, rather than dropping its entries', async () => {
    const dir = stateDir();
    writeFileSync(path.join(dir, REVOCATION_FILE), '{"version":1,"jtis":');
    await expect(addRevocations(dir, { jtis: [] }, Date.now())).rejects.toThrow(/JSON/);
  });

  it('replaces the key file whole, 0640 to the directory’s group', async () => {
    const dir = stateDir();
    const file = path.join(dir, 'agent.key');
    writeFileSync(file, SigningKey.generate().toBase64url(), { mode: 0o600 });
    const key = SigningKey.generate();
    await replaceKeyFile(file, key);
    expect(readFileSync(file, 'utf8')).toBe(key.toBase64url());
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(statSync(file).gid).toBe(statSync(dir).gid);
  });
});

describe('FakeProvider revocation', () => {
  it('records revoke and rotateKey, and refuses an unknown sandbox', async () => {
    const provider = new FakeProvider();
    const key = SigningKey.generate();
    await provider.create({
      sandboxId: 'sb_1',
      tenantId: 't',
      signingKey: key,
      tokenIssuer: 'i',
      network: 'on',
    });
    await provider.rotateKey('sb_1', key);
    await provider.revoke('sb_1', { jtis: [] });
    expect(provider.revocations.map((r) => r.kind)).toEqual(['rotateKey', 'revoke']);
    await expect(provider.revoke('sb_2', { jtis: [] })).rejects.toMatchObject({ code: 'SANDBOX_NOT_FOUND' });
  });
});
