/**
 * The langgraph suite: the deepagents backend (`@sbx/langgraph`) against the SDK calls it
 * wraps, measured in the same run on one broker (`tsx bench/langgraph/run.ts [name…]`).
 */
import { runSuite, type Verdict } from '../lib/measure.js';
import { releaseAll } from '../lib/resources.js';
import { benchBackendOverhead } from './backend-overhead.js';
import { openLanggraphWorld, type LanggraphWorld } from './bench-world.js';
import { benchFirstCall } from './first-call.js';

const MEASUREMENTS: ReadonlyArray<readonly [string, (world: LanggraphWorld) => Promise<Verdict[]>]> = [
  ['overhead', benchBackendOverhead],
  ['first-call', benchFirstCall],
];

async function runAll(wanted: readonly string[]): Promise<Verdict[]> {
  const world = await openLanggraphWorld();
  const verdicts: Verdict[] = [];
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
        console.error(err);
        const message = err instanceof Error ? err.message : String(err);
        verdicts.push({
          metric: `${name}: did not complete`,
          value: Number.NaN,
          unit: '',
          target: message.slice(0, 120),
          pass: false,
        });
      }
    }
  } finally {
    await world.close();
    await releaseAll();
  }
  return verdicts;
}

await runSuite(
  'langgraph',
  MEASUREMENTS.map(([name]) => name),
  runAll,
);
