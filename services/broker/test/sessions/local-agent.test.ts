// End to end with real agents (the local provider): a negotiated token works
// against its own sandbox's agent for exactly the granted capabilities, not
// against another sandbox's agent, and releasing the last binding ends the agent.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { ThreadSandboxResponse } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;

describe(`negotiated tokens on real agents [${backend.name}]`, () => {
  // The local provider, its agents' exits recorded by the broker; its data directory removed after the tests.
  const broker = useLocalBroker(backend, {
    isolation: 'none',
    settings: { provisioningWaitMs: 20_000 },
  });
  let human: string;
  let agent: string;

  beforeAll(async () => {
    const scopes = ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'];
    human = await broker.apiKey({ scopes, principalType: 'user' });
    agent = await broker.apiKey({ scopes, principalType: 'agent' });
  }, 60_000);

  const open = async (key: string, threadId: string, scopes: string[]) => {
    const res = await request(broker.url)
      .post(`/threads/${threadId}/sandbox`)
      .set(bearer(key))
      .send({ scopes });
    expect(res.status).toBe(200);
    return ThreadSandboxResponse.parse(res.body);
  };
  const call = (
    sandbox: ThreadSandboxResponse,
    path: string,
    init: { method?: string; body?: string; json?: boolean } = {},
    token = sandbox.token,
  ) =>
    fetch(`${sandbox.endpoints.http}${path}`, {
      ...(init.method === undefined ? {} : { method: init.method }),
      ...(init.body === undefined ? {} : { body: init.body }),
      headers: {
        authorization: `Bearer ${token}`,
        ...(init.json === true ? { 'content-type': 'application/json' } : {}),
      },
    });

  it('files with fs:rw, exec with process, nothing across sandboxes, and the agent ends on release', async () => {
    const myThread = `thr_${randomUUID()}`;
    const mine = await open(human, myThread, ['fs:rw', 'shell']);
    const written = await call(mine, '/files/hello.txt', {
      method: 'PUT',
      body: 'hello from the broker test',
    });
    expect(written.status).toBeLessThan(300);
    const read = await call(mine, '/files/hello.txt');
    expect(await read.text()).toBe('hello from the broker test');
    // A human has no process capability.
    const exec = await call(mine, '/v1/exec', {
      method: 'POST',
      body: JSON.stringify({ cmd: 'true' }),
      json: true,
    });
    expect(exec.status).toBe(403);

    const theirs = await open(agent, `thr_${randomUUID()}`, ['fs:rw', 'process']);
    const ran = await call(theirs, '/v1/exec', {
      method: 'POST',
      body: JSON.stringify({ cmd: 'echo $((6 * 7))' }),
      json: true,
    });
    expect(ran.status).toBe(200);
    expect((await ran.json()) as Record<string, unknown>).toMatchObject({ exit_code: 0, stdout: '42\n' });
    // My token on their agent, and theirs on mine: refused.
    expect((await call(theirs, '/files/hello.txt', {}, mine.token)).status).toBe(401);
    expect((await call(mine, '/files/hello.txt', {}, theirs.token)).status).toBe(401);

    expect((await request(broker.url).delete(`/threads/${myThread}/sandbox`).set(bearer(human))).status).toBe(
      204,
    );
    await expect(call(mine, '/files/hello.txt')).rejects.toThrow('fetch failed'); // nobody listens any more
    expect(await broker.provider.status(mine.sandbox_id)).toBe('missing');
  }, 60_000);
});
