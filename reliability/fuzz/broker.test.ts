// Fuzz of the broker (reliability/README.md): generated malformed HTTP requests and
// WebSocket frames against a real broker process (support/broker-target.ts) on Postgres.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  openPostgresTestDatabase,
  type TestDatabase,
} from '../../services/broker/test/support/test-database.js';
import { brokerSurface, brokerWsSurface, type BrokerReady } from './support/broker-surface.js';
import { inputs, SEED } from './support/fuzz-settings.js';
import { heapGrowthMiB } from './support/fuzz-run.js';
import { runHttpFuzz } from './support/http-run.js';
import { startBrokerTarget, type Target } from './support/targets.js';
import { runWsFuzz } from './support/ws-run.js';

describe(`broker fuzz (seed ${SEED}; SBX_FUZZ_SEED=${SEED} replays it)`, () => {
  let database: TestDatabase;
  let target: Target;
  let ready: BrokerReady;

  beforeAll(async () => {
    database = await openPostgresTestDatabase();
    target = await startBrokerTarget(database.url);
    ready = target.ready as unknown as BrokerReady;
  }, 180_000);

  afterAll(async () => {
    await target?.stop();
    await database?.close();
  }, 60_000);

  it('answers generated HTTP requests with envelopes or documented successes, never a 5xx or a hang', async () => {
    const report = await runHttpFuzz('broker-http', target, ready.url, brokerSurface(ready), {
      count: inputs(4000),
      warmUp: inputs(800),
      concurrency: 16,
    });
    console.log(`broker HTTP: ${report.inputs} inputs in ${report.ms} ms: ${report.summary}`, report.memory);
    expect(heapGrowthMiB(report)).toBeLessThan(16);
    expect(report.failures).toEqual([]);
    expect(target.errors).toEqual([]);
    expect(target.alive()).toBe(true);
  }, 600_000);

  it('answers generated WebSocket sessions with error frames and policy closes, never 1011 or a hang', async () => {
    const report = await runWsFuzz(
      'broker-ws',
      target,
      ready.url.replace(/^http/, 'ws'),
      brokerWsSurface(ready),
      {
        count: inputs(1500),
        warmUp: inputs(300),
        concurrency: 16,
      },
    );
    console.log(`broker WS: ${report.inputs} inputs in ${report.ms} ms: ${report.summary}`, report.memory);
    expect(heapGrowthMiB(report)).toBeLessThan(16);
    expect(report.failures).toEqual([]);
    expect(target.errors).toEqual([]);
    expect(target.alive()).toBe(true);
  }, 600_000);
});
