/**
 * The broker benchmark suite: `get` of an existing session against a floor measured in the
 * same run, and cold `ensure` through the local provider. `tsx bench/broker/run.ts [get|ensure]`
 * runs only the named ones. Everything runs against one broker process on a throwaway
 * Postgres database (see bench-world.ts); a measurement that throws is reported as failed
 * and the rest still run. Every process, database, Redis key and temporary file the run
 * created is gone before it exits (1 when a target is missed).
 */
import { cpus, loadavg } from 'node:os';
import { info, runSuite, type Verdict } from '../lib/measure.js';
import { releaseAll } from '../lib/resources.js';
import { openBenchWorld, type BenchWorld } from './bench-world.js';
import { benchColdEnsure } from './cold-ensure.js';
import { benchSessionGet } from './session-get.js';

const MEASUREMENTS: ReadonlyArray<readonly [string, (world: BenchWorld) => Promise<Verdict[]>]> = [
  ['get', benchSessionGet],
  ['ensure', benchColdEnsure],
];

function failed(name: string, err: unknown): Verdict {
  console.error(err);
  const message = err instanceof Error ? err.message : String(err);
  return {
    metric: `${name}: did not complete`,
    value: Number.NaN,
    unit: '',
    target: message.slice(0, 120),
    pass: false,
  };
}

async function runAll(wanted: readonly string[]): Promise<Verdict[]> {
  const verdicts: Verdict[] = [
    info('machine: CPUs', cpus().length, ''),
    info('machine: load average (1 min) before', loadavg()[0] ?? Number.NaN, ''),
  ];
  let world: BenchWorld;
  try {
    world = await openBenchWorld();
  } catch (err) {
    return [...verdicts, failed('setup', err)];
  }
  try {
    for (const [name, measure] of MEASUREMENTS) {
      if (wanted.length > 0 && !wanted.includes(name)) continue;
      console.log(`-- ${name}`);
      try {
        const results = await measure(world);
        for (const verdict of results)
          console.log(`   ${verdict.metric}: ${verdict.value.toFixed(3)} ${verdict.unit}`);
        verdicts.push(...results);
      } catch (err) {
        verdicts.push(failed(name, err));
      }
    }
    verdicts.push(info('machine: load average (1 min) after', loadavg()[0] ?? Number.NaN, ''));
  } finally {
    const leftBehind = await world.close();
    await releaseAll();
    verdicts.push({
      metric: 'cleanup: agents left running after the broker stopped',
      value: leftBehind,
      unit: '',
      target: '= 0',
      pass: leftBehind === 0,
    });
  }
  return verdicts;
}

await runSuite(
  'broker',
  MEASUREMENTS.map(([name]) => name),
  runAll,
);
