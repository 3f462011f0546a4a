// Files survive suspend and resume, byte for byte: a tree made through the agent (small,
// empty, 20 MiB random, every byte value, an executable, relative symlinks to a file and a
// directory, an empty directory, names with spaces, unicode and odd characters) is hashed
// through the file API and through the sandbox's own tools, the lease reaper suspends the
// sandbox (its agent stops), a heartbeat or an ensure resumes it, and both hashes are the
// same. /tmp is the sandbox's tmpfs, held by its agent: like a reboot, it starts empty.
// With the real local provider, under bubblewrap (the broker runs as root in CI) and
// without isolation.
import { existsSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { HeartbeatResponse } from '@sbx/protocol';
import type { LocalProvider } from '../../src/providers/local-provider.js';
import { startLocalKit, type LocalKit } from '../providers/local-provider-kit.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import {
  execIn,
  hashesThroughExec,
  hashesThroughFileApi,
  LeapingClock,
  openSession,
  suspendThroughReaper,
  upload,
  type AgentAccess,
} from './suspend-kit.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;
const isolations = existsSync('/usr/bin/bwrap') ? (['bubblewrap', 'none'] as const) : (['none'] as const);

const MAKE_TREE = `set -e
mkdir -p tree/sub/deeper 'tree/with space' tree/empty
printf 'small\\n' > tree/small.txt
: > tree/zero-length
head -c 20971520 /dev/urandom > tree/sub/big.bin
printf 'spaced' > 'tree/with space/a file.txt'
printf 'leading' > tree/-leading
printf 'odd' > "tree/#hash%pct'quote"
printf 'unicode' > 'tree/ünïcödé ✓.txt'
printf '#!/bin/sh\\necho run\\n' > tree/run.sh && chmod 0755 tree/run.sh
printf 'deep' > tree/sub/deeper/d.txt
ln -s ../small.txt tree/sub/link-to-small
ln -s deeper tree/sub/link-to-dir`;

describe.each(isolations)(
  `files across suspend and resume, local provider (%s) [${backend.name}]`,
  (isolation) => {
    let kit: LocalKit | undefined;
    const clock = new LeapingClock();
    const broker = useBroker<LocalProvider>(backend, {
      provider: async (onAgentExit) => (kit = await startLocalKit({ isolation, onAgentExit })).provider,
      settings: { provisioningWaitMs: 20_000 },
      clock: clock.now,
      loops: false,
    });
    let key: string;

    beforeAll(async () => {
      key = await broker.apiKey({
        scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox'],
        // An agent's session: `fs:rw` and `process` (a human's holds `shell` instead).
        principalType: 'service',
      });
    });
    afterAll(async () => {
      await kit?.dispose();
    });

    /** Makes the tree, returns both views of it. */
    async function makeTree(agent: AgentAccess) {
      await execIn(agent, MAKE_TREE);
      await upload(
        agent,
        'tree/bytes.bin',
        Uint8Array.from({ length: 256 }, (_, i) => i),
      );
      await upload(agent, 'tree/with space/random.bin', randomBytes(65_536));
      const viaApi = await hashesThroughFileApi(agent, 'tree');
      // The tree is what the test made: a hash of nothing would prove nothing.
      expect(viaApi.size).toBe(17);
      expect(viaApi.get('tree/sub/link-to-small')).toMatch(/^symlink /);
      expect(viaApi.get('tree/empty')).toMatch(/^dir /);
      return { viaApi, viaExec: await hashesThroughExec(agent, 'tree') };
    }

    async function expectSameTree(agent: AgentAccess, before: Awaited<ReturnType<typeof makeTree>>) {
      expect(await hashesThroughFileApi(agent, 'tree')).toEqual(before.viaApi);
      expect(await hashesThroughExec(agent, 'tree')).toBe(before.viaExec);
      expect(
        (await execIn(agent, 'readlink tree/sub/link-to-small; cat tree/sub/link-to-dir/d.txt')).stdout,
      ).toBe('../small.txt\ndeep');
    }

    it('keeps every file when a heartbeat resumes the sandbox', async () => {
      const session = await openSession(broker, key, `thr_${randomUUID()}`);
      const id = session.binding.sandbox_id;
      const before = await makeTree({ base: session.dataplane.http_base_url, token: session.token });

      await suspendThroughReaper(broker, clock, id);
      const beat = await request(broker.url)
        .post(`/v1/sandbox/sessions/${session.session_id}/heartbeat`)
        .set(bearer(key))
        .send({});
      expect(beat.status).toBe(200);
      const resumed = HeartbeatResponse.parse(beat.body);
      expect(resumed.state).toBe('active');
      const base = resumed.dataplane?.http_base_url;
      if (base === undefined) throw new Error('a resumed sandbox must say where its agent is');
      await expectSameTree({ base, token: session.token }, before);
    }, 240_000);

    it('keeps every file when an ensure resumes the sandbox, twice over', async () => {
      const threadId = `thr_${randomUUID()}`;
      const first = await openSession(broker, key, threadId);
      const before = await makeTree({ base: first.dataplane.http_base_url, token: first.token });
      for (let cycle = 0; cycle < 2; cycle++) {
        await suspendThroughReaper(broker, clock, first.binding.sandbox_id);
        const again = await openSession(broker, key, threadId);
        // The same sandbox, not a new one in its place.
        expect(again.binding.sandbox_id).toBe(first.binding.sandbox_id);
        await expectSameTree({ base: again.dataplane.http_base_url, token: again.token }, before);
      }
    }, 360_000);

    // Without isolation /tmp is the host's own: only a confined sandbox has one of its own.
    (isolation === 'bubblewrap' ? describe : describe.skip)("the sandbox's /tmp", () => {
      it('starts empty after a resume, as after a reboot', async () => {
        const session = await openSession(broker, key, `thr_${randomUUID()}`);
        const agent = { base: session.dataplane.http_base_url, token: session.token };
        await execIn(agent, 'echo per-boot > /tmp/marker');
        expect((await execIn(agent, 'cat /tmp/marker')).stdout).toBe('per-boot\n');

        await suspendThroughReaper(broker, clock, session.binding.sandbox_id);
        const again = await openSession(broker, key, session.binding.scope.id);
        const resumed = { base: again.dataplane.http_base_url, token: again.token };
        expect((await execIn(resumed, 'test -e /tmp/marker || echo gone')).stdout).toBe('gone\n');
      }, 120_000);
    });
  },
);
