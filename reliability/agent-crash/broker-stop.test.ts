// No workspace image stays mounted once the broker stops, whatever its agents were doing:
// one running, one whose agent crashed and waits out its restart's backoff. Found by hand
// before: an agent's crash took it out of the provider's running agents, so close() never
// ended its sandbox and `mount | grep <dataDir>` still showed its image after the broker
// stopped. The crashed one is not started again after the stop either.
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { expect, it } from '@jest/globals';
import { agentPidsOf } from '../../services/broker/test/providers/local-provider-kit.js';
import { until } from '../../services/broker/test/support/until.js';
import {
  clientOf,
  describeOnPostgres,
  hostWorkspace,
  killAgent,
  mountsUnder,
  restarted,
  sessionOn,
  useCrashBroker,
} from './crash-kit.js';

describeOnPostgres('agent crash: the broker stops', () => {
  // The second crash waits a minute before its restart: the broker stops meanwhile.
  const broker = useCrashBroker({ backoffMs: 60_000, maxBackoffMs: 60_000 });

  it('unmounts every workspace, a crashed agent waiting for its restart included', async () => {
    const client = await clientOf(broker);
    const [running, crashed] = await Promise.all([
      sessionOn(client, `thr_stop_running_${randomUUID()}`),
      sessionOn(client, `thr_stop_crashed_${randomUUID()}`),
    ]);
    const crashedId = crashed.response.sandbox.id;
    await restarted(broker, crashedId, killAgent(broker, crashedId));
    killAgent(broker, crashedId);
    await until(async () => (await broker.provider.status(crashedId)) === 'starting', 'the crash noticed');
    expect(broker.provider.agentPid(crashedId)).toBeUndefined();
    const ids = [running.response.sandbox.id, crashedId];
    // The workspaces directory is a bind of itself while a volume is mounted in it (shared-parent.ts).
    expect(mountsUnder(broker.dataDir()).toSorted()).toEqual(
      [
        path.join(broker.dataDir(), 'workspaces'),
        ...ids.map((id) => hostWorkspace(broker.dataDir(), id)),
      ].toSorted(),
    );

    // What the broker's close() does: the assembly's own close, then its provider's.
    await broker.broker.close();
    await broker.provider.close();
    expect(mountsUnder(broker.dataDir())).toEqual([]);
    for (const id of ids) expect(agentPidsOf(id)).toEqual([]);
    await expect(broker.provider.start(crashedId)).rejects.toThrow(/shut down/);
  }, 300_000);
});
