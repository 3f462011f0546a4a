/**
 * The first call on a new thread: the backend's `execute('true')` on a thread it has not
 * seen (ensure: a new sandbox, then the command) against what `sbx ensure` + `sbx exec`
 * do over the SDK (ensure, then one exec), alternated so both see the same machine.
 * Reported as p50 and p99 of each and their ratios.
 */
import { randomBytes } from 'node:crypto';
import { BrokerSession } from '@sbx/client';
import { DEFAULT_ACTOR_ID, SbxSandbox } from '@sbx/langgraph';
import { durationNs, info, percentile, type Verdict } from '../lib/measure.js';
import type { LanggraphWorld } from './bench-world.js';

const SAMPLES = 12;

const newThread = (): string => `thr_cold_${randomBytes(6).toString('hex')}`;

async function sdkFirstCall(world: LanggraphWorld): Promise<number> {
  let session: BrokerSession | undefined;
  const ns = await durationNs(async () => {
    session = await BrokerSession.ensure(world.client, {
      scope: { type: 'thread', id: newThread() },
      actor: { type: 'agent', id: DEFAULT_ACTOR_ID },
    });
    await session.sandbox().exec.run({ argv: ['sh', '-c', 'true'] });
  });
  await session?.release();
  return ns;
}

async function backendFirstCall(world: LanggraphWorld): Promise<number> {
  const backend = new SbxSandbox({ broker: world.client, threadId: newThread() });
  const ns = await durationNs(async () => {
    await backend.initialize();
    const result = await backend.execute('true');
    if (result.exitCode !== 0) throw new Error(`execute answered ${result.exitCode}: ${result.output}`);
  });
  await backend.close();
  return ns;
}

export async function benchFirstCall(world: LanggraphWorld): Promise<Verdict[]> {
  const sdk: number[] = [];
  const backend: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    sdk.push(await sdkFirstCall(world));
    backend.push(await backendFirstCall(world));
  }
  const ms = (values: number[], p: number): number => percentile(values, p) / 1e6;
  return [
    info('sdk ensure + exec p50', ms(sdk, 50), 'ms', '(floor)'),
    info('sdk ensure + exec p99', ms(sdk, 99), 'ms', '(floor)'),
    info('backend first execute p50', ms(backend, 50), 'ms'),
    info('backend first execute p99', ms(backend, 99), 'ms'),
    info('first call p50 ratio', ms(backend, 50) / ms(sdk, 50), '×'),
    info('first call p99 ratio', ms(backend, 99) / ms(sdk, 99), '×'),
  ];
}
