// A data-plane call through the relay is use, like a heartbeat (docs/relay.md, "Suspended
// sandboxes"): a sandbox the lease reaper suspended is resumed by the call, which answers
// 423 SANDBOX_STARTING with Retry-After while the agent starts (here the wait bound is 0,
// so the first call always sees it), and a retry reaches the same files. A sandbox its owner
// stopped stays stopped: 409 until `POST …/start`. Real broker, real local provider.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { ExecResponse, ThreadSandboxResponse } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useLocalBroker } from '../support/use-local-broker.js';
import { LeapingClock, stateOf, suspendThroughReaper } from '../lifecycle/suspend-kit.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;
const HASH = { argv: ['sha256sum', 'notes/a.txt'] };

describe(`relayed calls to a suspended sandbox [${backend.name}]`, () => {
  const clock = new LeapingClock();
  const broker = useLocalBroker(backend, {
    isolation: 'none',
    // No wait at all: a relayed call to a suspended sandbox answers 423 at once.
    settings: { provisioningWaitMs: 0 },
    dataplaneRelay: true,
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

  /** A thread's sandbox with a file in it; its relay-mode endpoint, token and the file's hash. */
  async function sandboxWithFile() {
    const opened = await request(broker.url)
      .post(`/threads/thr_${randomUUID()}/sandbox`)
      .set(bearer(key))
      .send({ scopes: ['fs:rw', 'process'] });
    if (opened.status !== 200) throw new Error(`negotiation answered ${opened.status}`);
    const session = ThreadSandboxResponse.parse(opened.body);
    const up = await fetch(`${session.endpoints.http}/v1/files/upload?path=notes/a.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.token}` },
      body: `kept ${randomUUID()}`,
    });
    expect(up.status).toBeLessThan(300);
    const first = await command(session.sandbox_id);
    expect(first.status).toBe(200);
    return { session, id: session.sandbox_id, hash: ExecResponse.parse(first.body).stdout };
  }

  const command = (id: string) =>
    request(broker.url).post(`/v1/sandboxes/${id}/commands`).set(bearer(key)).send(HASH);

  const dpExec = (base: string, token: string) =>
    fetch(`${base}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(HASH),
    });

  /** Retries as a client would until the call passes, within a generous ceiling. */
  async function untilPassed<T extends { status: number }>(call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const answer = await call();
      if (answer.status !== 423 || Date.now() > deadline) return answer;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('resumes on a relayed command: 423 with Retry-After first, then the same files', async () => {
    const { id, hash } = await sandboxWithFile();
    await suspendThroughReaper(broker, clock, id);

    const starting = await command(id);
    expect(starting.status).toBe(423);
    expect(starting.body.error.code).toBe('SANDBOX_STARTING');
    expect(Number(starting.headers['retry-after'])).toBeGreaterThan(0);

    const passed = await untilPassed(() => command(id));
    expect(passed.status).toBe(200);
    expect(ExecResponse.parse(passed.body).stdout).toBe(hash);
    expect(await stateOf(broker, id)).toBe('active');
  }, 120_000);

  it('simply proceeds when the resume finishes within the wait bound', async () => {
    const { id, hash } = await sandboxWithFile();
    await suspendThroughReaper(broker, clock, id);
    // Another instance on the same database and provider, one that waits as sessions do.
    const patient = await broker.instance({ settings: { provisioningWaitMs: 20_000 }, loops: false });
    const passed = await request(patient.url)
      .post(`/v1/sandboxes/${id}/commands`)
      .set(bearer(key))
      .send(HASH);
    expect(passed.status).toBe(200);
    expect(ExecResponse.parse(passed.body).stdout).toBe(hash);
  }, 120_000);

  it("resumes on a relay-mode call with the session's own token", async () => {
    const { session, id, hash } = await sandboxWithFile();
    await suspendThroughReaper(broker, clock, id);

    const starting = await dpExec(session.endpoints.http, session.token);
    expect(starting.status).toBe(423);
    expect(starting.headers.get('retry-after')).not.toBeNull();

    const passed = await untilPassed(() => dpExec(session.endpoints.http, session.token));
    expect(passed.status).toBe(200);
    expect(ExecResponse.parse(await passed.json()).stdout).toBe(hash);
  }, 120_000);

  it('asks again where a sandbox is when the address it remembered went stale', async () => {
    // The file's command leaves this broker remembering where the sandbox runs.
    const { id } = await sandboxWithFile();
    const other = await broker.instance({ loops: false });
    const stopped = await request(other.url).post(`/v1/sandboxes/${id}/stop`).set(bearer(key)).send();
    expect([stopped.status, stopped.body.state]).toEqual([200, 'suspended']);
    // Held back, the clock keeps the remembered address fresh: the agent there is gone.
    const refused = await clock.ahead(-30_000, () => command(id));
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain(`POST /v1/sandboxes/${id}/start`);
  }, 120_000);

  it('leaves a sandbox its owner stopped stopped: 409 until started', async () => {
    const { session, id, hash } = await sandboxWithFile();
    const stopped = await request(broker.url).post(`/v1/sandboxes/${id}/stop`).set(bearer(key)).send();
    expect([stopped.status, stopped.body.state]).toEqual([200, 'suspended']);

    const refused = await command(id);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain(`POST /v1/sandboxes/${id}/start`);
    expect((await dpExec(session.endpoints.http, session.token)).status).toBe(409);
    // Nothing was started behind the owner's back.
    expect(await stateOf(broker, id)).toBe('suspended');
    expect(await broker.provider.status(id)).toBe('stopped');

    const started = await request(broker.url).post(`/v1/sandboxes/${id}/start`).set(bearer(key)).send();
    expect([started.status, started.body.state]).toEqual([200, 'active']);
    const after = await command(id);
    expect(after.status).toBe(200);
    expect(ExecResponse.parse(after.body).stdout).toBe(hash);

    // Once started, it is the lifecycle's again: the reaper's suspension is resumed by a call.
    await suspendThroughReaper(broker, clock, id);
    expect((await untilPassed(() => command(id))).status).toBe(200);
  }, 120_000);
});
