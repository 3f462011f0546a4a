// The kernel's session keyring passes across uid changes and namespaces: a broker started
// from a login session (whose keyring may hold Kerberos or ecryptfs keys) must not hand it
// to user code, nor let two sandboxes share one.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

const asRootWithKeyctl = process.getuid?.() === 0 && existsSync('/usr/bin/keyctl') ? describe : describe.skip;
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const script = fileURLToPath(new URL('./keyring-broker.ts', import.meta.url));

asRootWithKeyctl('session keyrings of sandboxes', () => {
  it("keeps the broker's keyring from user code and sandboxes from each other", () => {
    const output = execFileSync('keyctl', ['session', '-', process.execPath, '--import', 'tsx', script], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 60_000,
    });
    expect(output).toBe('A: no-sbx-broker-secret\nB: no-sbx-from-a\n');
  });
});
