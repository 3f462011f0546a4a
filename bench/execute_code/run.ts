/**
 * The execute_code suite: the agent-facing tool route `POST /v1/execute_code` against a
 * bare `POST {agent}/v1/code` of the same snippet in the same sandbox, measured in the same
 * run on one broker (`tsx bench/execute_code/run.ts [python|bash]`). Exits 1 when a target
 * is missed; every process, database and Redis key the run created is gone before it exits.
 */
import { cpus, loadavg } from 'node:os';
import { agentsLeftVerdict } from '../broker/broker-process.js';
import { info } from '../lib/measure.js';
import { runMeasurements, runSuite, type Measurement } from '../lib/suite.js';
import { openExecuteCodeWorld, type ExecuteCodeWorld } from './bench-world.js';
import { benchOverhead } from './overhead.js';

const MEASUREMENTS: ReadonlyArray<Measurement<ExecuteCodeWorld>> = [
  ['python', benchOverhead('python')],
  ['bash', benchOverhead('bash')],
];

const load = (when: string) => info(`machine: load average (1 min) ${when}`, loadavg()[0] ?? Number.NaN, '');

/** The machine's load around the run (other people's work moves floor and subject alike). */
const WORLD = {
  open: openExecuteCodeWorld,
  close: async (world: ExecuteCodeWorld) => [load('after'), agentsLeftVerdict(await world.close())],
};

await runSuite(
  'execute_code',
  MEASUREMENTS.map(([name]) => name),
  async (wanted) => [
    info('machine: CPUs', cpus().length, ''),
    load('before'),
    ...(await runMeasurements(WORLD, MEASUREMENTS, wanted)),
  ],
);
