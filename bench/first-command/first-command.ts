/**
 * Time to first command with the warm pool off or on: for each pattern (sequential,
 * staggered, burst; patterns.ts), the floor (a bare bubblewrap sandbox running `echo`,
 * bare-sandbox.ts) in the same pattern, then `count` "create sandbox → run echo" from the
 * SDK (sdk-world.ts), then every sandbox released before the next pattern. Reported:
 * p50/p95/p99 against the floor's p50 and the success rate; the only target is that every
 * first command succeeds.
 */
import { formatNumber, info, percentile, type Verdict } from '../lib/measure.js';
import { makeTempDir, removeTempDir } from '../lib/resources.js';
import { bareSandboxEcho, rawEcho } from './bare-sandbox.js';
import { PATTERNS, runPattern, type PatternName, type PatternRun } from './patterns.js';
import {
  openSdkWorld,
  poolFull,
  sdkCreateEcho,
  settle,
  threadPrefix,
  warmClaims,
  type SdkWorld,
} from './sdk-world.js';

/** Operations per pattern; `BENCH_FIRST_COMMAND_COUNT=10` for a quick run while developing. */
const COUNT = Number(process.env['BENCH_FIRST_COMMAND_COUNT'] ?? 100);
/** `BENCH_FIRST_COMMAND_PATTERNS=burst` runs that pattern alone (investigations). */
const WANTED = new Set((process.env['BENCH_FIRST_COMMAND_PATTERNS'] ?? PATTERNS.join(',')).split(','));
/** With the pool on, every first command of even a burst of COUNT can be a claim. */
const POOL_SIZE = COUNT;
const NS_PER_MS = 1e6;

const ms = (run: PatternRun, p: number): number => percentile(run.latenciesNs, p) / NS_PER_MS;

function patternLines(label: string, floor: PatternRun, subject: PatternRun, claims?: number): Verdict[] {
  const ok = subject.count - subject.failures;
  if (subject.failures > 0) console.error(`   ${label}: first failure: ${subject.firstError}`);
  if (floor.failures > 0) throw new Error(`${label}: the floor failed: ${floor.firstError}`);
  const [p50, p95, p99] = [ms(subject, 50), ms(subject, 95), ms(subject, 99)];
  const success: Verdict = {
    metric: `${label}: success rate`,
    value: (ok / subject.count) * 100,
    unit: '%',
    target: '= 100 %',
    pass: subject.failures === 0,
    // Percentiles of the first commands that succeeded; none when none did.
    table: {
      value:
        ok === 0
          ? `0/${subject.count} ok`
          : `${ok}/${subject.count} ok; p50 ${formatNumber(p50)}, p95 ${formatNumber(p95)}, p99 ${formatNumber(p99)} ms`,
      floor: `p50 ${formatNumber(ms(floor, 50))} ms`,
      ratio: ok === 0 ? '—' : `${formatNumber(p50 / ms(floor, 50))}× (p50)`,
    },
  };
  return [
    info(`${label}: floor bare bwrap sandbox → echo p50`, ms(floor, 50), 'ms', '(floor)'),
    info(`${label}: floor bare bwrap sandbox → echo p99`, ms(floor, 99), 'ms', '(floor)'),
    info(`${label}: p50`, p50, 'ms'),
    info(`${label}: p95`, p95, 'ms'),
    info(`${label}: p99`, p99, 'ms'),
    info(`${label}: p50 / floor p50`, p50 / ms(floor, 50), '×'),
    info(`${label}: wall time, first start to last answer`, subject.wallNs / NS_PER_MS, 'ms'),
    ...(claims === undefined ? [] : [info(`${label}: served from the warm pool`, claims, '')]),
    success,
  ];
}

async function measurePattern(world: SdkWorld, root: string, pattern: PatternName): Promise<Verdict[]> {
  const pool = world.poolSize === 0 ? 'off' : 'on';
  const label = `warm pool ${pool}, ${COUNT} ${pattern}`;
  if (world.poolSize > 0) await poolFull(world);
  const floor = await runPattern(pattern, COUNT, bareSandboxEcho(root));
  const prefix = threadPrefix(`${pool}_${pattern}`);
  const subject = await runPattern(pattern, COUNT, sdkCreateEcho(world, prefix));
  const claims = world.poolSize === 0 ? undefined : warmClaims(world, prefix);
  const lines = patternLines(label, floor, subject, claims);
  try {
    await settle(world);
  } catch (err) {
    // The pattern's numbers stand; the next pattern would not start from a clean state.
    throw new PatternLeftovers(lines, err);
  }
  return lines;
}

class PatternLeftovers extends Error {
  constructor(
    readonly lines: Verdict[],
    readonly reason: unknown,
  ) {
    super(reason instanceof Error ? reason.message : String(reason));
  }
}

const leftoversLine = (mode: string, err: PatternLeftovers): Verdict => ({
  metric: `warm pool ${mode}: every sandbox of a pattern ended before the next`,
  value: Number.NaN,
  unit: '',
  target: err.message.slice(0, 120),
  pass: false,
});

/** One broker with WARM_POOL_SIZE `poolSize`: a warm-up first command, then each pattern. */
async function measureMode(poolSize: number): Promise<Verdict[]> {
  const mode = poolSize === 0 ? 'off' : 'on';
  const root = makeTempDir('sbx-bench-first-command-');
  const world = await openSdkWorld(poolSize);
  const verdicts: Verdict[] = [];
  try {
    // The first request of a broker loads code paths no later one does.
    if (poolSize > 0) await poolFull(world);
    await sdkCreateEcho(world, threadPrefix('warmup'))(0);
    await settle(world);
    const raw = await runPattern('sequential', COUNT, rawEcho);
    verdicts.push(info(`warm pool ${mode}: context spawn('echo') p50`, ms(raw, 50), 'ms'));
    for (const pattern of PATTERNS.filter((name) => WANTED.has(name))) {
      try {
        verdicts.push(...(await measurePattern(world, root, pattern)));
      } catch (err) {
        if (!(err instanceof PatternLeftovers)) throw err;
        verdicts.push(...err.lines, leftoversLine(mode, err));
        break;
      }
    }
  } finally {
    const left = await world.close();
    removeTempDir(root);
    verdicts.push({
      metric: `warm pool ${mode}: sandbox processes left running after the broker stopped`,
      value: left,
      unit: '',
      target: '= 0',
      pass: left === 0,
    });
  }
  return verdicts;
}

export const benchPoolOff = (): Promise<Verdict[]> => measureMode(0);
export const benchPoolOn = (): Promise<Verdict[]> => measureMode(POOL_SIZE);
