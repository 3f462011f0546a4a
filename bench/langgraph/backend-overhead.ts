/**
 * The deepagents backend against the SDK calls it wraps, on one sandbox: `execute('true')`
 * against `exec.run(['sh', '-c', 'true'])`, and a 1 MiB `uploadFiles` + `downloadFiles`
 * against `files.write` + `files.read`. Same thread, same session kind (actor agent).
 */
import { randomBytes } from 'node:crypto';
import { BrokerSession } from '@sbx/client';
import { DEFAULT_ACTOR_ID, SbxSandbox } from '@sbx/langgraph';
import { info, median, ratioAtMost, timeAsync, type Verdict } from '../lib/measure.js';
import type { LanggraphWorld } from './bench-world.js';

const MIB = new Uint8Array(randomBytes(1024 * 1024));

/**
 * Median ns per operation of `floor` and `subject`, measured in alternating rounds so that
 * neither gets the warmer disk cache or the quieter machine.
 */
async function alternated(
  floor: () => Promise<unknown>,
  subject: () => Promise<unknown>,
  iterations: number,
): Promise<[number, number]> {
  const floors: number[] = [];
  const subjects: number[] = [];
  const time = async (op: () => Promise<unknown>): Promise<number> =>
    (await timeAsync('round', op, iterations, 1)).nsPerOp;
  for (let round = 0; round < 6; round++) {
    // Each goes first in every other round: the one after pays for the other's flushed writes.
    if (round % 2 === 0) {
      floors.push(await time(floor));
      subjects.push(await time(subject));
    } else {
      subjects.push(await time(subject));
      floors.push(await time(floor));
    }
  }
  return [median(floors), median(subjects)];
}

export async function benchBackendOverhead(world: LanggraphWorld): Promise<Verdict[]> {
  const threadId = `thr_bench_${randomBytes(4).toString('hex')}`;
  const backend = await SbxSandbox.create({ broker: world.client, threadId });
  const session = await BrokerSession.ensure(world.client, {
    scope: { type: 'thread', id: threadId },
    actor: { type: 'agent', id: DEFAULT_ACTOR_ID },
  });
  const sdk = session.sandbox();
  try {
    const sdkExec = (): Promise<unknown> => sdk.exec.run({ argv: ['sh', '-c', 'true'] });
    const [execFloor, execute] = await alternated(sdkExec, () => backend.execute('true'), 60);
    const [fileFloor, files] = await alternated(
      async () => {
        await sdk.files.write('bench-sdk.bin', MIB);
        await sdk.files.read('bench-sdk.bin');
      },
      async () => {
        await backend.uploadFiles([['bench-backend.bin', MIB]]);
        await backend.downloadFiles(['bench-backend.bin']);
      },
      20,
    );
    return [
      info('sdk exec.run (median)', execFloor / 1e6, 'ms', '(floor)'),
      ratioAtMost(
        'backend execute / sdk exec.run',
        { subject: execute / 1e6, floor: execFloor / 1e6, unit: 'ms' },
        1.2,
      ),
      info('sdk 1 MiB write+read', fileFloor / 1e6, 'ms', '(floor)'),
      ratioAtMost(
        'backend 1 MiB upload+download / sdk write+read',
        { subject: files / 1e6, floor: fileFloor / 1e6, unit: 'ms' },
        1.2,
      ),
    ];
  } finally {
    await backend.close();
    await session.release();
  }
}
