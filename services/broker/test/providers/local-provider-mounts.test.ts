// A sandbox's workspace volume is mounted on the host once, and only its own sandbox's views
// hold it. Each view binds the host's top-level directories recursively (agent-view.ts), and
// a data directory under one of them (/var, /root, a home) took every other sandbox's mounted
// workspace into each new view, hidden under the data directory's tmpfs yet alive: a stopped
// sandbox's image stayed in use by its neighbours' views, and its resume mounted the same
// ext4 image a second time. Needs workspace volumes: a root broker on a host with loop devices.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LocalProvider } from '../../src/providers/local-provider.js';
import { contractSpec } from './provider-contract.js';
import { captureLogger, newDataDirOutsideTmp, removeDataDir } from './local-provider-kit.js';

const withVolumes = process.getuid?.() === 0 && existsSync('/dev/loop-control') ? describe : describe.skip;

/** The loop devices backed by `image` (none once nothing mounts it). */
function loopsOf(image: string): string[] {
  return execFileSync('losetup', ['-j', image], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

/** Mount points in `pid`'s mount namespace at or under `dir`. */
function mountsUnder(pid: number, dir: string): string[] {
  return readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
}

withVolumes('local provider: workspace volumes stay out of other sandboxes', () => {
  const dataDir = newDataDirOutsideTmp();
  let provider: LocalProvider;

  beforeAll(async () => {
    provider = await LocalProvider.open({ dataDir, logger: captureLogger([]), isolation: 'bubblewrap' });
  });

  afterAll(async () => {
    await provider.close();
    removeDataDir(dataDir);
  });

  it("leaves a stopped sandbox's workspace in no other view, its image free", async () => {
    const [first, second] = [1, 2].map(() => contractSpec({ network: 'off' }));
    await provider.create(first!);
    await provider.create(second!);
    const image = path.join(dataDir, 'sandboxes', first!.sandboxId, 'workspace.img');
    const secondAgent = provider.agentPid(second!.sandboxId)!;
    await provider.stop(first!.sandboxId);
    expect({
      inTheOtherView: mountsUnder(secondAgent, path.join(dataDir, 'workspaces', first!.sandboxId)),
      loopDevices: loopsOf(image),
    }).toEqual({ inTheOtherView: [], loopDevices: [] });
    // Resumed, it is mounted once, on one loop device.
    await provider.start(first!.sandboxId);
    expect(loopsOf(image)).toHaveLength(1);
  }, 120_000);
});
