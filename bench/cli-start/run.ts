/**
 * The cli-start suite: how long `sbx` takes to start, against a bare `node -e 0` measured in
 * the same run, alternated with it (`tsx bench/cli-start/run.ts [help|mcp-initialize|command]`).
 * `BENCH_SBX_BIN` names another `sbx` entry to measure (an installed package's dist/bin.js,
 * another checkout's bin/sbx.mjs); default: this checkout's packages/cli/bin/sbx.mjs.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { info, percentile, ratioAtMost, type Verdict } from '../lib/measure.js';
import { makeTempDir } from '../lib/resources.js';
import { runMeasurements, runSuite, type Measurement } from '../lib/suite.js';
import { timeToExit, timeToFirstLine, type Run, type Timed } from './process-timing.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SBX_BIN = path.resolve(ROOT, process.env['BENCH_SBX_BIN'] ?? 'packages/cli/bin/sbx.mjs');
/** Alternated pairs (floor, subject) per measurement, after WARM_UP pairs that are not counted. */
const SAMPLES = Number(process.env['BENCH_CLI_SAMPLES'] ?? 30);
const WARM_UP = 3;
const TARGET_RATIO = 2;

interface World {
  /** The environment of every `sbx`: its own SBX_HOME, logged in to a broker no test reaches. */
  readonly env: NodeJS.ProcessEnv;
}

function openWorld(): Promise<World> {
  const home = path.join(makeTempDir('sbx-bench-cli-'), 'home');
  mkdirSync(home, { mode: 0o700 });
  // `sbx mcp` needs a login to start; nothing here calls the broker (initialize answers locally).
  const config = { broker_url: 'http://127.0.0.1:9', api_key: 'sbk_bench', actor_id: 'usr_bench' };
  writeFileSync(path.join(home, 'config.json'), JSON.stringify(config), { mode: 0o600 });
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SBX_')));
  return Promise.resolve({ env: { ...env, SBX_HOME: home } });
}

const FLOOR: Run = { command: process.execPath, args: ['-e', '0'] };

const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
})}\n`;

/**
 * Floor and subject alternated, so both see the same machine, after WARM_UP rounds; the
 * nanoseconds of each. `context`, when given, runs in the same rounds (a report line).
 */
async function alternate(subject: () => Promise<Timed>, check: (t: Timed) => void, context?: Run) {
  const floor: number[] = [];
  const measured: number[] = [];
  const contextual: number[] = [];
  for (let i = 0; i < WARM_UP + SAMPLES; i++) {
    const f = await timeToExit(FLOOR);
    const s = await subject();
    const c = context === undefined ? undefined : await timeToFirstLine(context);
    check(s);
    if (i < WARM_UP) continue;
    floor.push(f.ns);
    measured.push(s.ns);
    if (c !== undefined) contextual.push(c.ns);
  }
  return { floor, measured, contextual };
}

const ms = (values: number[], p: number) => percentile(values, p) / 1e6;

function verdicts(name: string, floor: number[], measured: number[], target: 'ratio' | 'report'): Verdict[] {
  const ratio = ms(measured, 50) / ms(floor, 50);
  return [
    info(`${name}: floor node -e 0 p50`, ms(floor, 50), 'ms', '(floor)'),
    info(`${name}: p50`, ms(measured, 50), 'ms'),
    info(`${name}: p90`, ms(measured, 90), 'ms'),
    target === 'ratio'
      ? ratioAtMost(
          `${name}: p50 / floor p50`,
          { subject: ms(measured, 50), floor: ms(floor, 50), unit: 'ms' },
          TARGET_RATIO,
        )
      : info(`${name}: p50 / floor p50`, ratio, '×'),
  ];
}

function expectText(pattern: RegExp, what: string) {
  return (t: Timed) => {
    if (!pattern.test(t.stdout)) throw new Error(`${what}: unexpected stdout ${t.stdout.slice(0, 200)}`);
  };
}

/** `sbx --help`: the usage text, printed and exited. */
async function benchHelp(world: World): Promise<Verdict[]> {
  const run = { command: process.execPath, args: [SBX_BIN, '--help'], env: world.env };
  const { floor, measured } = await alternate(
    () => timeToExit(run),
    expectText(/shared sandboxes from the terminal/, 'sbx --help'),
  );
  return verdicts('sbx --help', floor, measured, 'ratio');
}

/**
 * Context for the MCP line: a bare ES module that answers the first stdin line with one line,
 * which is what any stdio server must at least do (node's ES module loader, stdin, stdout).
 */
const BARE_RESPONDER: Run = {
  command: process.execPath,
  args: [
    '--input-type=module',
    '-e',
    "process.stdin.once('data', () => process.stdout.write('{\"id\":1}\\n')); process.stdin.resume();",
  ],
  input: INITIALIZE,
};

/** `sbx mcp` over stdio: spawn to the `initialize` answer, as an MCP host starts it. */
async function benchMcpInitialize(world: World): Promise<Verdict[]> {
  const run = { command: process.execPath, args: [SBX_BIN, 'mcp'], env: world.env, input: INITIALIZE };
  const name = 'sbx mcp initialize round trip';
  const { floor, measured, contextual } = await alternate(
    () => timeToFirstLine(run),
    expectText(/^\{"result":\{.*"serverInfo".*"id":1\}\n$/, 'initialize'),
    BARE_RESPONDER,
  );
  return [
    ...verdicts(name, floor, measured, 'ratio'),
    info(`${name}: a bare node answering a line, p50 / floor p50`, ms(contextual, 50) / ms(floor, 50), '×'),
  ];
}

/** Context: a command that loads the SDK and the login but calls nobody (`sbx sessions`). */
async function benchCommand(world: World): Promise<Verdict[]> {
  const run = { command: process.execPath, args: [SBX_BIN, 'sessions'], env: world.env };
  const { floor, measured } = await alternate(
    () => timeToExit(run),
    () => undefined,
  );
  return verdicts('sbx sessions', floor, measured, 'report');
}

const MEASUREMENTS: ReadonlyArray<Measurement<World>> = [
  ['help', benchHelp],
  ['mcp-initialize', benchMcpInitialize],
  ['command', benchCommand],
];

const machine = (): Verdict[] => [
  info('machine: CPUs', cpus().length, ''),
  info('machine: load average (1 min)', loadavg()[0] ?? Number.NaN, ''),
];

await runSuite(
  'cli-start',
  MEASUREMENTS.map(([name]) => name),
  async (wanted) => [
    ...machine(),
    ...(await runMeasurements({ open: openWorld, close: () => Promise.resolve() }, MEASUREMENTS, wanted)),
  ],
);
