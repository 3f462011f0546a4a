import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { ExecResponse, ProcessStartResponse } from '@sbx/protocol';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';
import { call } from './exec-test-kit.js';

const ROUTES: Array<[string, string, unknown]> = [
  ['POST', '/v1/exec', { argv: ['true'] }],
  ['POST', '/v1/processes', { argv: ['true'] }],
  ['GET', '/v1/processes', undefined],
  ['GET', '/v1/processes/{id}', undefined],
  ['GET', '/v1/processes/{id}/output', undefined],
  ['POST', '/v1/processes/{id}/stdin', { data: 'x' }],
  ['POST', '/v1/processes/{id}/signal', { signal: 'SIGTERM' }],
  ['DELETE', '/v1/processes/{id}', undefined],
];

describe('exec and processes need the process scope', () => {
  let agent: TestAgent;
  let processId: string;

  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx)] });
    const started = await call(agent, agent.token(['process']), 'POST', '/v1/processes', {
      argv: ['sleep', '30'],
    });
    processId = ProcessStartResponse.parse(started.body).process_id;
  });
  afterAll(async () => agent.close());

  it.each(ROUTES)(
    '%s %s: 401 without a token, 403 with fs and shell scopes only',
    async (method, path, body) => {
      const target = path.replace('{id}', processId);
      const anonymous = await call(agent, undefined, method, target, body);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body['error']).toMatchObject({ code: 'UNAUTHENTICATED' });
      const denied = await call(agent, agent.token(['fs:rw', 'shell']), method, target, body);
      expect(denied.status).toBe(403);
      expect(denied.body['error']).toMatchObject({ retryable: false });
      // the refused calls changed nothing: the process still runs
      const info = await call(agent, agent.token(['process']), 'GET', `/v1/processes/${processId}`);
      expect(info.body['status']).toBe('running');
    },
  );

  it('refuses the exec socket to a token without the process scope', async () => {
    const socket = await TestSocket.open(`${agent.wsUrl}/v1/exec/ws`);
    socket.send({ type: 'auth', token: agent.token(['fs:rw', 'shell']) });
    expect((await socket.closed).code).toBe(1008);
    expect(socket.frames.some((frame) => frame['type'] === 'auth_ok')).toBe(false);
  });
});

describe('concurrency limit', () => {
  let agent: TestAgent;
  let token: string;

  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx, { maxConcurrentProcesses: 2 })] });
    token = agent.token(['process']);
  });
  afterAll(async () => agent.close());

  it('answers 429 RATE_LIMITED while the limit of running processes is reached, for every way to start one', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const started = await call(agent, token, 'POST', '/v1/processes', { argv: ['sleep', '30'] });
      ids.push(ProcessStartResponse.parse(started.body).process_id);
    }
    const refused = await call(agent, token, 'POST', '/v1/exec', { argv: ['true'] });
    expect(refused.status).toBe(429);
    expect(refused.body['error']).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await call(agent, token, 'POST', '/v1/processes', { argv: ['true'] })).status).toBe(429);
    const socket = await TestSocket.authed(`${agent.wsUrl}/v1/exec/ws`, token);
    socket.send({ type: 'start', argv: ['true'] });
    expect(await socket.next((frame) => frame['type'] === 'error')).toMatchObject({
      error: { code: 'RATE_LIMITED' },
    });
    socket.close();

    await call(agent, token, 'DELETE', `/v1/processes/${ids[0]}`);
    const allowed = await call(agent, token, 'POST', '/v1/exec', { argv: ['echo', 'ok'] });
    expect(allowed.status).toBe(200);
    expect(ExecResponse.parse(allowed.body).stdout).toBe('ok\n');
  });
});
