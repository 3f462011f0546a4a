// An agent crash is a restart of the agent on the same workspace, never a new sandbox
// (docs/lifecycle.md, "Agent crashes"). Round after round, files are written through the
// SDK, the sandbox's agent is killed with SIGKILL (its pid from its provider), and the
// provider starts it again on its own: the thread's ensure and heartbeat answer the same
// sandbox, at the same address, still active, with every file byte for byte, and each
// restart has its audit row. Found by hand before: the sandbox turned `failed` within
// 200 ms and the next ensure gave the thread a new, empty sandbox.
// Bounded: 3 crash rounds; long (SBX_RELIABILITY=long): 12.
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import type { BrokerClient } from '../../packages/client/src/index.js';
import {
  clientOf,
  describeOnPostgres,
  hostWorkspace,
  killAgent,
  LONG,
  mountsUnder,
  restarted,
  RIDE_OUT_RESTARTS,
  sessionOn,
  sha256,
  stateOf,
  treeHashes,
  useCrashBroker,
} from './crash-kit.js';

const ROUNDS = LONG ? 12 : 3;

describeOnPostgres('agent crash: a restart on the same workspace', () => {
  // The rounds come one after another: no crash loop before the last.
  const broker = useCrashBroker({ maxCrashes: ROUNDS + 1 });
  let client: BrokerClient;

  beforeAll(async () => {
    client = await clientOf(broker);
  });

  it(`keeps the sandbox, its address and its files through ${ROUNDS} kill -9 of its agent`, async () => {
    const thread = `thr_restart_${randomUUID()}`;
    const first = await sessionOn(client, thread);
    const sandboxId = first.response.sandbox.id;
    const address = first.endpoints.httpBaseUrl;
    const workspace = hostWorkspace(broker.dataDir(), sandboxId);
    const written = new Map<string, string>();
    let session = first;

    for (let round = 1; round <= ROUNDS; round++) {
      const sandbox = session.sandbox({ retry: RIDE_OUT_RESTARTS });
      const bytes = randomBytes(round === 1 ? 4 << 20 : 65_536 * round);
      await sandbox.files.write(`round-${round}/data.bin`, bytes);
      await sandbox.exec.run({ argv: ['sh', '-c', `printf '%s' ${round} > round-${round}/by-exec.txt`] });
      written.set(`round-${round}/data.bin`, sha256(bytes));
      written.set(`round-${round}/by-exec.txt`, sha256(String(round)));
      const before = treeHashes(workspace);

      const killed = killAgent(broker, sandboxId);
      await restarted(broker, sandboxId, killed);

      // The thread's next ensure: the same sandbox, at the same address, with every file.
      session = await sessionOn(client, thread);
      expect(session.response.sandbox.id).toBe(sandboxId);
      expect(session.endpoints.httpBaseUrl).toBe(address);
      const beat = await session.heartbeat();
      expect([beat.state, beat.dataplane?.http_base_url]).toEqual(['active', address]);
      expect(treeHashes(workspace)).toEqual(before);
      const again = session.sandbox({ retry: RIDE_OUT_RESTARTS });
      for (const [file, hash] of written) expect(sha256(await again.files.read(file))).toBe(hash);
    }

    const row = await stateOf(broker, sandboxId);
    expect([row.state, row.live, row.failedAt, row.httpBaseUrl]).toEqual(['active', true, null, address]);
    const restarts = await broker.repositories.audit.listBySandbox(sandboxId);
    const rows = restarts.filter((event) => event.action === 'sandbox.agent_restarted');
    expect(rows).toHaveLength(ROUNDS);
    expect(rows.map((event) => event.detail)).toContainEqual(
      expect.objectContaining({ signal: 'SIGKILL', crashes: ROUNDS, state: 'active' }),
    );
    // One sandbox ever on the thread.
    const sandboxes = await broker.database.prisma.sandbox.count({ where: { scopeId: thread } });
    expect(sandboxes).toBe(1);
    // The workspaces directory is a bind of itself while a volume is mounted in it (shared-parent.ts).
    expect(mountsUnder(broker.dataDir())).toEqual([path.dirname(workspace), workspace]);
    await session.release();
    expect(mountsUnder(broker.dataDir())).toEqual([]);
  }, 600_000);
});
