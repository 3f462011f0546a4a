// Run by local-provider-keyring.test.ts inside a session keyring that holds a secret, as
// a broker started from a login session would be: opens a local provider, creates two
// sandboxes, and prints what user code in them finds in its session keyring.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createLogger } from '@sbx/service-kit';
import { LocalProvider } from '../../src/providers/local-provider.js';
import { SigningKey } from '@sbx/tokens';
import type { SandboxSpec } from '../../src/providers/provider.js';
import { newDataDirOutsideTmp } from './local-provider-kit.js';
import { exec } from './sandbox-doors.js';

execFileSync('keyctl', ['add', 'user', 'sbx-broker-secret', 'hunter2', '@s']);
const dataDir = newDataDirOutsideTmp();
const provider = await LocalProvider.open({
  dataDir,
  logger: createLogger({ service: 'keyring-test', level: 'error' }),
  isolation: 'bubblewrap',
});
try {
  const spec = (name: string): SandboxSpec => ({
    sandboxId: `sb_keyring_${process.pid}_${name}`,
    tenantId: 'tenant_keyring',
    signingKey: SigningKey.generate(),
    tokenIssuer: 'sbx-broker-test',
    network: 'off',
  });
  const [a, b] = [spec('a'), spec('b')];
  const doorA = { spec: a, dataplane: (await provider.create(a)).dataplane };
  const doorB = { spec: b, dataplane: (await provider.create(b)).dataplane };
  const find = (name: string): string =>
    `keyctl search @s user ${name} >/dev/null 2>&1 && echo found-${name} || echo no-${name}`;
  const inA = await exec(
    doorA,
    `${find('sbx-broker-secret')}; keyctl add user sbx-from-a hello @s >/dev/null`,
  );
  const inB = await exec(doorB, find('sbx-from-a'));
  process.stdout.write(`A: ${inA.stdout}B: ${inB.stdout}`);
} finally {
  await provider.close();
  rmSync(dataDir, { recursive: true, force: true });
}
