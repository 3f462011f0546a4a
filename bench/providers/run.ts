/**
 * The provider benchmark suite: what a local sandbox costs the host, and cold against warm
 * ensures (ensure.ts). `tsx bench/providers/run.ts
 * [name…]` runs only the named measurements. One local provider (bubblewrap) is opened for
 * the run and closed at the end, with every sandbox it started.
 */
import { runMeasurements, runSuite, type Measurement } from '../lib/suite.js';
import { benchEnsure } from './ensure.js';
import { benchSandboxMemory } from './memory.js';
import { closeProviderWorld, openProviderWorld, type ProviderWorld } from './provider-world.js';

const MEASUREMENTS: ReadonlyArray<Measurement<ProviderWorld>> = [
  ['memory', benchSandboxMemory],
  // Brokers of its own (warm pools are a broker's): the world's provider stays idle.
  ['ensure', () => benchEnsure()],
];

await runSuite(
  'providers',
  MEASUREMENTS.map(([name]) => name),
  (wanted) =>
    runMeasurements(
      { open: openProviderWorld, close: async (world) => closeProviderWorld(world) },
      MEASUREMENTS,
      wanted,
    ),
);
