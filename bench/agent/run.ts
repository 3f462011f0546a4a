/**
 * The agent benchmark suite: every measurement in sequence, each against a floor measured
 * in the same run. `tsx bench/agent/run.ts [name…]` runs only the named ones. A
 * measurement that throws is reported as failed and the rest still run; every process
 * and temporary file the run created is gone before it exits (1 when a target is missed).
 */
import { runSuite, type Verdict } from '../lib/measure.js';
import { releaseAll } from '../lib/resources.js';
import { benchDownload } from './download.js';
import { benchExec } from './exec.js';
import { benchIdleShells } from './idle-shells.js';
import { benchPtyThroughput } from './pty-throughput.js';
import { benchTokenVerify } from './token-verify.js';
import { benchUploadRss } from './upload-rss.js';

const MEASUREMENTS: ReadonlyArray<readonly [string, () => Verdict[] | Promise<Verdict[]>]> = [
  ['token', benchTokenVerify],
  ['exec', benchExec],
  ['pty', benchPtyThroughput],
  ['download', benchDownload],
  ['upload', benchUploadRss],
  ['shells', benchIdleShells],
];

async function runAll(wanted: readonly string[]): Promise<Verdict[]> {
  const verdicts: Verdict[] = [];
  for (const [name, measure] of MEASUREMENTS) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    console.log(`-- ${name}`);
    try {
      const results = await measure();
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
    } finally {
      await releaseAll();
    }
  }
  return verdicts;
}

await runSuite(
  'agent',
  MEASUREMENTS.map(([name]) => name),
  runAll,
);
