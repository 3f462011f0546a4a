/**
 * The first-command suite: time to first command as the public sandbox comparisons measure
 * it — "create sandbox → run echo" from the SDK, 100 sequential, 100 staggered and a burst
 * of 100 — with the broker's warm pool off and on, each pattern against a bare bubblewrap
 * sandbox running `echo` in the same pattern (`tsx bench/first-command/run.ts
 * [pool-off|pool-on]`). Latencies are reported; the target is that every first command
 * succeeds. Every broker, agent, database, Redis key and workspace the run made is gone
 * before it exits.
 */
import { cpus, loadavg } from 'node:os';
import { info, type Verdict } from '../lib/measure.js';
import { runMeasurements, runSuite, type Measurement } from '../lib/suite.js';
import { benchPoolOff, benchPoolOn } from './first-command.js';

/** Each measurement starts a broker of its own (the pool size is a broker's setting). */
const MEASUREMENTS: ReadonlyArray<Measurement<void>> = [
  ['pool-off', benchPoolOff],
  ['pool-on', benchPoolOn],
];

const load = (when: string): Verdict =>
  info(`machine: load average (1 min) ${when}`, loadavg()[0] ?? Number.NaN, '');

const NO_WORLD = {
  open: async (): Promise<void> => {},
  close: async (): Promise<Verdict[]> => [load('after')],
  releaseEach: true,
};

await runSuite(
  'first-command',
  MEASUREMENTS.map(([name]) => name),
  async (wanted) => [
    info('machine: CPUs', cpus().length, ''),
    load('before'),
    ...(await runMeasurements(NO_WORLD, MEASUREMENTS, wanted)),
  ],
);
