// A burst of creates starts at most `concurrentStarts` agents at once (start-gate.ts); the
// rest wait their turn, and every one comes up.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LocalProvider } from '../../src/providers/local-provider.js';
import { StartGate } from '../../src/providers/start-gate.js';
import { contractSpec } from './provider-contract.js';
import { captureLogger, newDataDirOutsideTmp, removeDataDir } from './local-provider-kit.js';

/** A promise with its resolve, for starts the test finishes by hand. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('start gate', () => {
  it('runs at most its width at once, in the order asked, and passes on a failed turn', async () => {
    const gate = new StartGate(2);
    const running = new Set<number>();
    const began: number[] = [];
    const finish = [0, 1, 2, 3, 4].map(() => deferred());
    const runs = finish.map((step, i) =>
      gate.run(async () => {
        running.add(i);
        began.push(i);
        await step.promise;
        running.delete(i);
        if (i === 1) throw new Error('start 1 failed');
        return i;
      }),
    );
    await Promise.resolve();
    expect({ began: [...began], waiting: gate.waiting }).toEqual({ began: [0, 1], waiting: 3 });
    finish[1]!.resolve(); // fails: its turn goes to the next in line all the same
    await expect(runs[1]).rejects.toThrow('start 1 failed');
    expect([...running].toSorted()).toEqual([0, 2]);
    for (const i of [0, 2, 3, 4]) finish[i]!.resolve();
    expect(await Promise.all([runs[0], runs[2], runs[3], runs[4]])).toEqual([0, 2, 3, 4]);
    expect({ began, waiting: gate.waiting }).toEqual({ began: [0, 1, 2, 3, 4], waiting: 0 });
  });
});

describe('local provider: a burst of creates', () => {
  const dataDir = newDataDirOutsideTmp();
  let provider: LocalProvider;

  beforeAll(async () => {
    provider = await LocalProvider.open({ dataDir, logger: captureLogger([]), concurrentStarts: 1 });
  });

  afterAll(async () => {
    await provider.close();
    removeDataDir(dataDir);
  });

  it('starts one agent at a time with a gate of one, and every sandbox comes up', async () => {
    const specs = [1, 2, 3].map(() => contractSpec({ network: 'off' }));
    const up = new Set<string>();
    let mostStarting = 0;
    // Spawned but not yet answered: agents starting now.
    const sample = setInterval(() => {
      const starting = specs.filter(
        (spec) => !up.has(spec.sandboxId) && provider.agentPid(spec.sandboxId) !== undefined,
      );
      mostStarting = Math.max(mostStarting, starting.length);
    }, 2);
    try {
      await Promise.all(
        specs.map(async (spec) => {
          await provider.create(spec);
          up.add(spec.sandboxId);
        }),
      );
    } finally {
      clearInterval(sample);
    }
    expect(mostStarting).toBe(1);
    expect(await Promise.all(specs.map((spec) => provider.status(spec.sandboxId)))).toEqual([
      'running',
      'running',
      'running',
    ]);
  }, 120_000);
});
