// Every route family tells the client where the sandbox's processes see their workspace,
// as the provider reported it, so no client guesses between /workspace and a host path.
import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { GetBindingResponse, SessionResponse, ThreadSandboxResponse } from '@sbx/protocol';
import { FakeProvider } from '../../src/providers/fake-provider.js';
import { bearer } from '../support/broker-harness.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

// Not the column's default: a provider that reports something else must be heard.
const WORKSPACE = '/home/sandbox/work';

describeEachBackend('workspace path in session answers', (backend) => {
  const broker = useBroker(backend, {
    provider: (onAgentExit) => new FakeProvider({ onAgentExit, workspacePath: WORKSPACE }),
  });
  let key: string;

  beforeAll(async () => {
    key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
  });

  it('MVP and full negotiation, GET and the thread route all report it', async () => {
    const threadId = `thr_${randomUUID()}`;
    const mvp = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(key))
      .send({ thread_id: threadId, mode: 'ensure' });
    expect(mvp.status).toBe(200);
    const session = SessionResponse.parse(mvp.body);
    expect(session.sandbox.workspace_path).toBe(WORKSPACE);
    expect(session.dataplane.workspace_path).toBe(WORKSPACE);

    const got = await request(broker.url).get(`/v1/sandbox/sessions/${session.session_id}`).set(bearer(key));
    expect(GetBindingResponse.parse(got.body).dataplane.workspace_path).toBe(WORKSPACE);

    const thread = await request(broker.url)
      .post(`/threads/${threadId}/sandbox`)
      .set(bearer(key))
      .send({ scopes: ['fs:rw'] });
    expect(thread.status).toBe(200);
    expect(ThreadSandboxResponse.parse(thread.body).workspace_path).toBe(WORKSPACE);
  });

  it('still reports it after the sandbox was suspended and resumed', async () => {
    const threadId = `thr_${randomUUID()}`;
    const ensure = () =>
      request(broker.url)
        .post('/v1/sandbox/sessions')
        .set(bearer(key))
        .send({ scope: { type: 'thread', id: threadId }, mode: 'ensure' });
    const session = SessionResponse.parse((await ensure()).body);
    await broker.provider.stop(session.binding.sandbox_id);
    await broker.repositories.sandboxes.transition(session.binding.sandbox_id, 'suspended');
    const resumed = SessionResponse.parse((await ensure()).body);
    expect(resumed.binding.state).toBe('active');
    expect(resumed.dataplane.workspace_path).toBe(WORKSPACE);
  });
});
