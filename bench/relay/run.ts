/**
 * The relay suite: the broker's data-plane relay for the sandbox resource API against a bare
 * node:http proxy in front of the same sandbox's agent (the cost of any hop here), measured
 * in the same run on one broker, with direct access to the agent for context
 * (`tsx bench/relay/run.ts [exec|download]`). Exits 1 when a target is missed; every
 * process, database and Redis key the run created is gone before it exits.
 */
import { cpus, loadavg } from 'node:os';
import { agentsLeftVerdict } from '../broker/broker-process.js';
import { info } from '../lib/measure.js';
import { runMeasurements, runSuite, type Measurement } from '../lib/suite.js';
import { benchDownloadThroughput } from './download-throughput.js';
import { benchExecRoundTrip } from './exec-round-trip.js';
import { openRelayWorld, type RelayWorld } from './relay-world.js';

const MEASUREMENTS: ReadonlyArray<Measurement<RelayWorld>> = [
  ['exec', benchExecRoundTrip],
  ['download', benchDownloadThroughput],
];

const load = (when: string) => info(`machine: load average (1 min) ${when}`, loadavg()[0] ?? Number.NaN, '');

/** The machine's load around the run (other people's work moves floor and subject alike). */
const WORLD = {
  open: openRelayWorld,
  close: async (world: RelayWorld) => [load('after'), agentsLeftVerdict(await world.close())],
};

await runSuite(
  'relay',
  MEASUREMENTS.map(([name]) => name),
  async (wanted) => [
    info('machine: CPUs', cpus().length, ''),
    load('before'),
    ...(await runMeasurements(WORLD, MEASUREMENTS, wanted)),
  ],
);
