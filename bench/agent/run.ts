/**
 * The agent benchmark suite: every measurement in sequence, each against a floor measured
 * in the same run. `tsx bench/agent/run.ts [name…]` runs only the named ones. A
 * measurement that throws is reported as failed and the rest still run; every process
 * and temporary file the run created is gone before it exits (1 when a target is missed).
 * Each measurement starts its own agent, so there is no shared world.
 */
import { runMeasurements, runSuite, type Measurement } from '../lib/suite.js';
import { benchDownloadBusy } from './download-busy.js';
import { benchDownload } from './download.js';
import { benchExec } from './exec.js';
import { benchIdleShells } from './idle-shells.js';
import { benchPtyJsonThroughput, benchPtyThroughput } from './pty-throughput.js';
import { benchTokenVerify } from './token-verify.js';
import { benchUploadRss } from './upload-rss.js';

const MEASUREMENTS: ReadonlyArray<Measurement<void>> = [
  ['token', benchTokenVerify],
  ['exec', benchExec],
  ['pty', benchPtyThroughput],
  ['pty-json', benchPtyJsonThroughput],
  ['download', benchDownload],
  ['download-busy', benchDownloadBusy],
  ['upload', benchUploadRss],
  ['shells', benchIdleShells],
];

/** Nothing shared; what each measurement started is released before the next one. */
const NO_WORLD = {
  open: async (): Promise<void> => {},
  close: async (): Promise<void> => {},
  releaseEach: true,
};

await runSuite(
  'agent',
  MEASUREMENTS.map(([name]) => name),
  (wanted) => runMeasurements(NO_WORLD, MEASUREMENTS, wanted),
);
