// A suspended sandbox is never silently replaced by an empty one: when its workspace (the
// directory, and its volume image where it has one) or its record disappeared while it was
// suspended, the next ensure, heartbeat or relayed call fails loudly — 409 naming what is
// gone, the sandbox `failed` with that reason — and no agent starts on a fresh empty
// workspace. Only a later, explicit ensure gets a new sandbox, next to the failed one.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { LocalProvider } from '../../src/providers/local-provider.js';
import { sandboxPaths } from '../../src/providers/sandbox-layout.js';
import { startLocalKit, type LocalKit } from '../providers/local-provider-kit.js';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';
import { LeapingClock, openSession, stateOf, suspendThroughReaper } from './suspend-kit.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;
const isolation = existsSync('/usr/bin/bwrap') ? 'bubblewrap' : 'none';
const onVolumes = process.getuid?.() === 0 && existsSync('/dev/loop-control');

describe(`a suspended sandbox whose workspace is gone, local provider (${isolation}) [${backend.name}]`, () => {
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
      principalType: 'service',
    });
  });
  afterAll(async () => {
    await kit?.dispose();
  });

  const pathsOf = (id: string) => {
    if (kit === undefined) throw new Error('the local provider is not open');
    return sandboxPaths(kit.dataDir, id);
  };

  /** A suspended sandbox of a new thread, with a file written before. */
  async function suspendedSandbox() {
    const threadId = `thr_${randomUUID()}`;
    const session = await openSession(broker, key, threadId);
    const up = await fetch(`${session.dataplane.http_base_url}/v1/files/upload?path=precious.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.token}` },
      body: 'precious',
    });
    expect(up.status).toBeLessThan(300);
    await suspendThroughReaper(broker, clock, session.binding.sandbox_id);
    return { threadId, session, id: session.binding.sandbox_id };
  }

  /** The answer to a 409 that found the workspace gone, and what it left behind. */
  async function expectFailedLoudly(id: string, answer: request.Response, gone: RegExp) {
    expect(answer.body.error.code).toBe('CONFLICT');
    expect(answer.body.error.message).toMatch(gone);
    expect(answer.body.error.message).not.toContain(kit?.dataDir ?? '/'); // no host path leaks out
    const row = await broker.database.prisma.sandbox.findUniqueOrThrow({ where: { id } });
    expect(row.state).toBe('failed');
    expect(row.failureReason).toMatch(gone);
    // No agent, and no empty workspace made in its place.
    expect(await broker.provider.status(id)).not.toBe('running');
    expect(existsSync(pathsOf(id).workspace)).toBe(false);
  }

  it('fails an ensure when the workspace was deleted on the host, and replaces nothing', async () => {
    const { threadId, id } = await suspendedSandbox();
    const paths = pathsOf(id);
    rmSync(paths.workspace, { recursive: true, force: true });
    rmSync(paths.volumeFile, { force: true }); // where the files really are on a volume host

    const ensured = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ scope: { type: 'thread', id: threadId }, mode: 'ensure' });
    expect(ensured.status).toBe(409);
    await expectFailedLoudly(id, ensured, /workspace .*is gone/);
    const ofThread = await broker.database.prisma.sandbox.count({ where: { scopeId: threadId } });
    expect(ofThread).toBe(1);

    // The owner asks again, knowing: a new sandbox, the failed one still there to read.
    const fresh = await openSession(broker, key, threadId);
    expect(fresh.binding.sandbox_id).not.toBe(id);
    const old = await request(broker.url).get(`/v1/sandboxes/${id}`).set(bearer(key));
    expect([old.body.state, old.body.failure_reason]).toEqual(['failed', expect.stringMatching(/is gone/)]);
  }, 120_000);

  it('fails a heartbeat when only the workspace directory is gone', async () => {
    const { session, id } = await suspendedSandbox();
    rmSync(pathsOf(id).workspace, { recursive: true, force: true });

    const beat = await request(broker.url)
      .post(`/v1/sandbox/sessions/${session.session_id}/heartbeat`)
      .set(bearer(key))
      .send({});
    expect(beat.status).toBe(409);
    await expectFailedLoudly(id, beat, /workspace directory is missing/);
  }, 120_000);

  // A root broker with loop devices keeps each workspace in a volume image (workspace-volumes.ts).
  (onVolumes ? describe : describe.skip)('on a host with workspace volumes', () => {
    it('fails when the volume image is gone, though its mount point is there', async () => {
      const { session, id } = await suspendedSandbox();
      expect(JSON.parse(readFileSync(pathsOf(id).recordFile, 'utf8'))).toMatchObject({ volume: true });
      rmSync(pathsOf(id).volumeFile);

      const beat = await request(broker.url)
        .post(`/v1/sandbox/sessions/${session.session_id}/heartbeat`)
        .set(bearer(key))
        .send({});
      expect(beat.status).toBe(409);
      expect(beat.body.error.message).toMatch(/volume image is missing/);
      expect(await stateOf(broker, id)).toBe('failed');
      expect(await broker.provider.status(id)).not.toBe('running');
    }, 120_000);
  });

  it("fails a relayed call when the sandbox's record is gone", async () => {
    const { id } = await suspendedSandbox();
    rmSync(pathsOf(id).stateDir, { recursive: true, force: true });
    rmSync(pathsOf(id).workspace, { recursive: true, force: true });

    const relayed = await request(broker.url)
      .post(`/v1/sandboxes/${id}/commands`)
      .set(bearer(key))
      .send({ argv: ['cat', 'precious.txt'] });
    expect(relayed.status).toBe(409);
    await expectFailedLoudly(id, relayed, /does not exist/);
    expect(await stateOf(broker, id)).toBe('failed');
  }, 120_000);
});
