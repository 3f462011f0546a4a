/**
 * The langgraph suite: the deepagents backend (`@sbx/langgraph`) against the SDK calls it
 * wraps, measured in the same run on one broker (`tsx bench/langgraph/run.ts [name…]`).
 */
import { runMeasurements, runSuite, type Measurement } from '../lib/suite.js';
import { benchBackendOverhead } from './backend-overhead.js';
import { openLanggraphWorld, type LanggraphWorld } from './bench-world.js';
import { benchFirstCall } from './first-call.js';

const MEASUREMENTS: ReadonlyArray<Measurement<LanggraphWorld>> = [
  ['overhead', benchBackendOverhead],
  ['first-call', benchFirstCall],
];

await runSuite(
  'langgraph',
  MEASUREMENTS.map(([name]) => name),
  (wanted) =>
    runMeasurements({ open: openLanggraphWorld, close: (world) => world.close() }, MEASUREMENTS, wanted),
);
