// Workspace images promise their size: the local provider refuses a create or a resume whose
// promise would pass the free space minus the reserve, with 507 and nothing half made
// (issue 26). Needs workspace volumes: a root broker on a host with loop devices.
import { existsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LocalProvider } from '../../src/providers/local-provider.js';
import { DEFAULT_SANDBOX_LIMITS } from '../../src/providers/sandbox-limits.js';
import { contractSpec, expectSbxError } from './provider-contract.js';
import { captureLogger, newDataDirOutsideTmp, removeDataDir } from './local-provider-kit.js';

const withVolumes = process.getuid?.() === 0 && existsSync('/dev/loop-control') ? describe : describe.skip;
const GIB = 1024 ** 3;
const limits = { ...DEFAULT_SANDBOX_LIMITS, diskBytes: 4 * GIB };

/** A reserve leaving room for `images` promises of 4 GiB and a half on the data directory's disk. */
async function reserveFor(dataDir: string, images: number): Promise<{ minBytes: number; fraction: number }> {
  const fs = await statfs(dataDir);
  return { minBytes: fs.bavail * fs.bsize - (images + 0.5) * limits.diskBytes, fraction: 0 };
}

withVolumes('local provider: workspaces never promise more disk than there is', () => {
  const dataDir = newDataDirOutsideTmp();
  let provider: LocalProvider;

  beforeAll(async () => {
    provider = await LocalProvider.open({
      dataDir,
      logger: captureLogger([]),
      isolation: 'bubblewrap',
      diskReserve: await reserveFor(dataDir, 2),
    });
  });

  afterAll(async () => {
    await provider.close();
    removeDataDir(dataDir);
  });

  it('refuses the create past the budget with 507, leaving nothing of it behind', async () => {
    const specs = [1, 2, 3].map(() => contractSpec({ network: 'off', limits }));
    const [first, second, third] = specs;
    await provider.create(first!);
    await provider.create(second!);
    const refusal = await expectSbxError(provider.create(third!), 'INSUFFICIENT_STORAGE');
    expect(refusal.message).toMatch(/\d+ bytes/);
    expect(existsSync(path.join(dataDir, 'sandboxes', third!.sandboxId))).toBe(false);
    expect(existsSync(path.join(dataDir, 'workspaces', third!.sandboxId))).toBe(false);
    expect(await provider.status(third!.sandboxId)).toBe('missing');
    // Destroying one gives its promise back.
    await provider.destroy(first!.sandboxId);
    await provider.create(third!);
    expect(await provider.status(third!.sandboxId)).toBe('running');
  });

  it('refuses a resume that no longer fits, keeping the sandbox and its files', async () => {
    const spec = contractSpec({ network: 'off', limits });
    const kept = path.join(dataDir, 'sandboxes', spec.sandboxId);
    for (const id of await provider.list()) await provider.destroy(id);
    await provider.create(spec);
    await provider.stop(spec.sandboxId);
    await provider.close();
    // The same data directory, a disk that has since filled up: no room for even one image.
    provider = await LocalProvider.open({
      dataDir,
      logger: captureLogger([]),
      isolation: 'bubblewrap',
      diskReserve: await reserveFor(dataDir, -1),
    });
    await expectSbxError(provider.start(spec.sandboxId), 'INSUFFICIENT_STORAGE');
    expect(await provider.status(spec.sandboxId)).toBe('stopped');
    expect(existsSync(path.join(kept, 'workspace.img'))).toBe(true);
  });
});
