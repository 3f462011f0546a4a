// The soak (script only, not CI): one broker process as operators run it (Postgres, Redis,
// the local provider under bubblewrap, a warm pool) and create → work → release cycles
// started at a steady rate: each ensures a new thread, writes a file and reads it back by
// hash, types a line in a shell and reads it back, and releases. Every so often the cycles
// pause, those in flight finish, the pool fills, and a sample is printed (soak-probe.ts);
// at the end the last sample is compared with the one after the warm-up, and the script
// exits 1 on any growth, any failed cycle, or any row of a sandbox terminated longer ago
// than the retention.
//
//   node_modules/.bin/tsx reliability/load/soak.ts [--minutes 30] [--rate 20] [--pool 4]
//                                                  [--samples 10] [--retention-minutes 10]
//
// --rate: cycles started per minute; --samples: samples over the run, besides the first.
import { createHash, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { BrokerClient, BrokerSession } from '../../packages/client/src/index.js';
import { openDatabase, type Database } from '../../services/broker/src/store/database.js';
import {
  operatorKey,
  startBrokerProcess,
  type BrokerProcess,
} from '../../services/broker/test/process/broker-process.js';
import {
  newDataDirOutsideTmp,
  removeDataDir,
} from '../../services/broker/test/providers/local-provider-kit.js';
import { startPrivatePostgres, startPrivateRedis } from '../broker-faults/private-servers.js';
import { INSPECT_ENV, inspectorUrlOf } from './inspector.js';
import { poolFull, prepareTenants } from './load-kit.js';
import { growth, HEADER, sample, tableRow, type SoakSample, type SoakTarget } from './soak-probe.js';
import { outputMatches } from './workload.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string', default: '20' },
    pool: { type: 'string', default: '4' },
    samples: { type: 'string', default: '10' },
    'retention-minutes': { type: 'string', default: '10' },
  },
});
const MINUTES = Number(values.minutes);
const RATE = Number(values.rate);
const POOL = Number(values.pool);
const SAMPLES = Number(values.samples);
const RETENTION_MS = Number(values['retention-minutes']) * 60_000;
/** A cycle's shell line that has not come back by then is a failed cycle (a hang). */
const ECHO_CEILING_MS = 60_000;

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** One create → work → release on a new thread; throws on anything a user would notice. */
async function cycle(client: BrokerClient, n: number): Promise<void> {
  const thread = `thr_soak_${n}_${randomBytes(3).toString('hex')}`;
  const session = await BrokerSession.ensure(client, {
    scope: { type: 'thread', id: thread },
    actor: { type: 'human', id: `human_${thread}` },
  });
  try {
    const sandbox = session.sandbox();
    const bytes = randomBytes(8192 + (n % 4096));
    await sandbox.files.write('soak/data.bin', bytes);
    const back = await sandbox.files.read('soak/data.bin');
    if (sha256(back) !== sha256(bytes)) throw new Error(`cycle ${n}: the file read back differs`);
    const shell = await sandbox.openShell();
    let output = '';
    shell.onData((data) => (output = (output + data.toString('utf8')).slice(-8192)));
    shell.write(`echo soak-${n}-$((${n}*3))\n`);
    await outputMatches(
      shell,
      () => output.includes(`soak-${n}-${n * 3}`),
      `the echo of cycle ${n}`,
      ECHO_CEILING_MS,
    );
    shell.close();
    await shell.exited;
  } finally {
    await session.release();
  }
}

async function main(): Promise<number> {
  const postgres = await startPrivatePostgres();
  const redis = await startPrivateRedis();
  const dataDir = newDataDirOutsideTmp();
  let db: Database | undefined;
  let broker: BrokerProcess | undefined;
  // Ctrl-C: the cycles in flight finish, then everything is taken down.
  const stopping = new AbortController();
  const stop = (): void => stopping.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    db = await openDatabase({ databaseUrl: postgres.url(), migrate: true, maxConnections: 4 });
    await prepareTenants(db);
    const adminKey = operatorKey();
    broker = await startBrokerProcess({
      DATABASE_URL: postgres.url(),
      BROKER_MASTER_KEY: randomBytes(32).toString('base64url'),
      BROKER_BOOTSTRAP_API_KEY: adminKey,
      BROKER_DATA_DIR: dataDir,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: `soak-${randomBytes(4).toString('hex')}`,
      WARM_POOL_SIZE: String(POOL),
      ...INSPECT_ENV,
    });
    const target: SoakTarget = {
      db,
      brokerPid: broker.child.pid!,
      inspectorUrl: inspectorUrlOf(broker.output()),
      dataDir,
      retentionMs: RETENTION_MS,
    };
    const client = new BrokerClient({ baseUrl: broker.url, apiKey: adminKey });
    console.log(
      `soak: ${MINUTES} min, ${RATE} cycles/min, warm pool ${POOL}, retention ${RETENTION_MS / 60_000} min, broker ${broker.url} (pid ${target.brokerPid})`,
    );
    console.log(HEADER);
    const started = Date.now();
    const minute = (): number => (Date.now() - started) / 60_000;
    let cycles = 0;
    const errors: string[] = [];
    const samples: SoakSample[] = [];
    const take = async (): Promise<void> => {
      await poolFull(db!, POOL);
      const taken = await sample(target, minute(), cycles, errors.length);
      samples.push(taken);
      console.log(tableRow(taken));
    };
    await take();
    const everyMs = 60_000 / RATE;
    const sampleEveryMs = (MINUTES * 60_000) / SAMPLES;
    let nextSample = started + sampleEveryMs;
    while (!stopping.signal.aborted && Date.now() < started + MINUTES * 60_000) {
      // Cycles start at a steady rate until the next sample, then those in flight finish.
      const inFlight: Promise<void>[] = [];
      while (!stopping.signal.aborted && Date.now() < Math.min(nextSample, started + MINUTES * 60_000)) {
        const n = ++cycles;
        inFlight.push(
          cycle(client, n).catch((err: unknown) => {
            errors.push(`cycle ${n}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
            console.log(`soak: ${errors.at(-1)}`);
          }),
        );
        // The rate's gap (a pacing, not a wait for an event).
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
      await Promise.all(inFlight);
      await take();
      nextSample += sampleEveryMs;
    }
    const baseline = samples.find((s) => s.minute >= MINUTES / 3) ?? samples[0]!;
    const found = growth(baseline, samples.at(-1)!, POOL);
    const last = samples.at(-1)!;
    console.log(
      `soak: ${cycles} cycles, ${errors.length} failed; per cycle the history tables grew by ` +
        `${((last.historyRows - samples[0]!.historyRows) / Math.max(1, cycles)).toFixed(1)} rows ` +
        `and ${last.terminatedRows} terminated sandbox rows are kept (no retention purges them)`,
    );
    for (const line of found) console.log(`soak: GROWTH ${line}`);
    console.log(found.length === 0 ? 'soak: no growth' : `soak: ${found.length} kinds of growth`);
    return found.length === 0 ? 0 : 1;
  } finally {
    await broker?.kill('SIGTERM');
    await db?.close().catch(() => undefined);
    await redis.close();
    await postgres.close();
    removeDataDir(dataDir);
  }
}

process.exitCode = await main().catch((err: unknown) => {
  console.error(err);
  return 2;
});
