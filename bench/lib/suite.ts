/**
 * Running a suite: its measurements in order against the world they share, the verdicts
 * printed and written to bench/results/<suite>.json, the exit code.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Verdict } from './measure.js';
import { releaseAll } from './resources.js';

/** Prints a table of verdicts, writes them to bench/results/<suite>.json, returns whether all passed. */
export function report(suite: string, verdicts: readonly Verdict[]): boolean {
  for (const v of verdicts) {
    console.log(
      `${v.pass ? 'PASS' : 'FAIL'}  ${v.metric.padEnd(56)} ${v.value.toFixed(3).padStart(10)} ${v.unit.padEnd(8)} target ${v.target}`,
    );
  }
  const dir = path.resolve('bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, `${suite}.json`),
    `${JSON.stringify({ suite, at: new Date().toISOString(), verdicts }, null, 2)}\n`,
  );
  return verdicts.every((v) => v.pass);
}

/**
 * The command line of a suite: the measurements named as arguments (all when none),
 * exit 2 for an unknown name, else the report's verdict as the exit code.
 */
export async function runSuite(
  suite: string,
  known: readonly string[],
  runAll: (wanted: readonly string[]) => Promise<Verdict[]>,
): Promise<void> {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    console.error(`unknown measurement ${unknown.join(', ')}; known: ${known.join(', ')}`);
    process.exitCode = 2;
    return;
  }
  const verdicts = await runAll(wanted);
  console.log('');
  process.exitCode = report(suite, verdicts) ? 0 : 1;
}

/** A named measurement of a suite, run against the suite's world. */
export type Measurement<W> = readonly [name: string, measure: (world: W) => Verdict[] | Promise<Verdict[]>];

/** What a suite's measurements share: set up once, torn down after the last one. */
export interface WorldSetup<W> {
  /** A throw is reported as `setup: did not complete` and no measurement runs. */
  open(): Promise<W>;
  /** Also after a failed measurement; may report on its own cleanup. */
  close(world: W): Promise<readonly Verdict[] | void>;
  /** Stop every tracked process and remove temp dirs after each measurement, not only at the end. */
  readonly releaseEach?: boolean;
}

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

/**
 * The measurements named in `wanted` (all when empty) in order, each printed as it ends; one
 * that throws becomes a failed verdict and the rest still run. Everything tracked is released at the end.
 */
export async function runMeasurements<W>(
  setup: WorldSetup<W>,
  measurements: ReadonlyArray<Measurement<W>>,
  wanted: readonly string[],
): Promise<Verdict[]> {
  const verdicts: Verdict[] = [];
  let world: W;
  try {
    world = await setup.open();
  } catch (err) {
    await releaseAll();
    return [failed('setup', err)];
  }
  try {
    for (const [name, measure] of measurements) {
      if (wanted.length > 0 && !wanted.includes(name)) continue;
      console.log(`-- ${name}`);
      try {
        const results = await measure(world);
        for (const v of results) console.log(`   ${v.metric}: ${v.value.toFixed(3)} ${v.unit}`);
        verdicts.push(...results);
      } catch (err) {
        verdicts.push(failed(name, err));
      } finally {
        if (setup.releaseEach === true) await releaseAll();
      }
    }
  } finally {
    try {
      verdicts.push(...((await setup.close(world)) ?? []));
    } catch (err) {
      verdicts.push(failed('cleanup', err));
    }
    await releaseAll();
  }
  return verdicts;
}
