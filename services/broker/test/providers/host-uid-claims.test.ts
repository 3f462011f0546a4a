// A root broker's sandbox users are unique on the host, across data directories
// (host-uid-claims.ts): two brokers with data directories of their own never give two
// sandboxes one host user.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { claimHostUid, releaseHostUid } from '../../src/providers/host-uid-claims.js';
import { LocalProvider } from '../../src/providers/local-provider.js';
import { readSandboxRecord, sandboxPaths } from '../../src/providers/sandbox-layout.js';
import { contractSpec } from './provider-contract.js';
import { captureLogger, newDataDirOutsideTmp, removeDataDir } from './local-provider-kit.js';

const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

describe('host uid claims', () => {
  const claims = mkdtempSync(path.join(os.tmpdir(), 'sbx-uid-claims-'));
  afterAll(() => rmSync(claims, { recursive: true, force: true }));

  it("skips a uid another data directory holds, and never releases another's claim", async () => {
    const first = { dataDir: '/srv/one', sandboxId: 'sb_a' };
    const second = { dataDir: '/srv/two', sandboxId: 'sb_a' };
    expect(await claimHostUid(claims, first, [200_001, 200_002])).toBe(200_001);
    // Raced for the same uids: the one already claimed is skipped.
    const [one, two] = await Promise.all([
      claimHostUid(claims, second, [200_001, 200_003, 200_004]),
      claimHostUid(claims, second, [200_003, 200_004]),
    ]);
    expect([one, two].toSorted()).toEqual([200_003, 200_004]);
    await expect(claimHostUid(claims, second, [200_001, 200_003])).rejects.toThrow(
      'every sandbox uid is claimed on this host',
    );
    // The same sandbox id in another data directory is another owner.
    await releaseHostUid(claims, 200_001, second);
    expect(existsSync(path.join(claims, '200001'))).toBe(true);
    await releaseHostUid(claims, 200_001, first);
    expect(existsSync(path.join(claims, '200001'))).toBe(false);
  });
});

asRoot('local provider: host uid claims', () => {
  const dataDir = newDataDirOutsideTmp();
  const claims = mkdtempSync(path.join(os.tmpdir(), 'sbx-uid-claims-'));
  let provider: LocalProvider;

  beforeAll(async () => {
    provider = await LocalProvider.open({ dataDir, logger: captureLogger([]), uidClaimsDir: claims });
  });

  afterAll(async () => {
    await provider.close();
    removeDataDir(dataDir);
    rmSync(claims, { recursive: true, force: true });
  });

  it('claims the host user of each sandbox it makes, and gives it back on destroy', async () => {
    const spec = contractSpec({ network: 'off' });
    await provider.create(spec);
    const record = await readSandboxRecord(sandboxPaths(dataDir, spec.sandboxId));
    const claim = path.join(claims, String(record?.hostUid), 'owner.json');
    expect(JSON.parse(readFileSync(claim, 'utf8'))).toEqual({ dataDir, sandboxId: spec.sandboxId });
    await provider.destroy(spec.sandboxId);
    expect(existsSync(path.dirname(claim))).toBe(false);
  }, 120_000);
});
