/**
 * The broker benchmark suite: `get` of an existing session against a floor measured in the
 * same run, and cold `ensure` through the local provider. `tsx bench/broker/run.ts [get|ensure]`
 * runs only the named ones. Everything runs against one broker process on a throwaway
 * Postgres database (see bench-world.ts); a measurement that throws is reported as failed
 * and the rest still run. Every process, database, Redis key and temporary file the run
 * created is gone before it exits (1 when a target is missed).
 */
import { cpus, loadavg } from 'node:os';
import { info, type Verdict } from '../lib/measure.js';
import { runMeasurements, runSuite, type Measurement } from '../lib/suite.js';
import { agentsLeftVerdict } from './broker-process.js';
import { openBenchWorld, type BenchWorld } from './bench-world.js';
import { benchColdEnsure } from './cold-ensure.js';
import { benchSessionGet } from './session-get.js';

const MEASUREMENTS: ReadonlyArray<Measurement<BenchWorld>> = [
  ['get', benchSessionGet],
  ['ensure', benchColdEnsure],
];

/** The load after the measurements, then the broker's stop: every agent it started must be gone. */
async function closeWorld(world: BenchWorld): Promise<Verdict[]> {
  const after = info('machine: load average (1 min) after', loadavg()[0] ?? Number.NaN, '');
  return [after, agentsLeftVerdict(await world.close())];
}

async function runAll(wanted: readonly string[]): Promise<Verdict[]> {
  const machine = [
    info('machine: CPUs', cpus().length, ''),
    info('machine: load average (1 min) before', loadavg()[0] ?? Number.NaN, ''),
  ];
  return [
    ...machine,
    ...(await runMeasurements({ open: openBenchWorld, close: closeWorld }, MEASUREMENTS, wanted)),
  ];
}

await runSuite(
  'broker',
  MEASUREMENTS.map(([name]) => name),
  runAll,
);
