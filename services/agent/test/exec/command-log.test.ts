import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CommandLogPage, ErrorEnvelope, type CommandLogEntry } from '@sbx/protocol';
import { mintCapabilityToken } from '@sbx/tokens';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { startTestAgent, TEST_ISSUER, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';
import { call, waitFor } from './exec-test-kit.js';

const ofType = (type: string) => (frame: Record<string, unknown>) => frame['type'] === type;

/** The `jti` of a token (its payload, unverified: the test minted it). */
function jtiOf(token: string): string {
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
    jti: string;
  };
  return payload.jti;
}

async function readLog(agent: TestAgent, query = '', token?: string): Promise<CommandLogPage> {
  const response = await call(agent, token ?? agent.token(['fs:ro']), 'GET', `/v1/commands/log${query}`);
  expect([response.status, response.body['error']]).toEqual([200, undefined]);
  return CommandLogPage.parse(response.body);
}

/** The log once every entry has ended (background and socket programs end after the answer). */
async function settledLog(agent: TestAgent, count: number): Promise<CommandLogEntry[]> {
  return waitFor(async () => {
    const { items } = await readLog(agent);
    return items.length === count && items.every((item) => item.ended_at !== null) && items;
  });
}

async function exec(agent: TestAgent, token: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await call(agent, token, 'POST', '/v1/exec', body);
  expect(response.status).toBe(200);
  return response.body;
}

describe('GET /v1/commands/log', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await startTestAgent({
      features: (ctx) => [
        execFeature(ctx, { killGraceMs: 300, legacyEndpoints: true, legacyInterpreter: '/bin/sh' }),
      ],
    });
  });
  afterAll(async () => agent.close());

  it('lists what each route ran, in order, with who, what, how it ended and the jti', async () => {
    const execToken = agent.token(['process'], { sub: 'usr_exec' });
    await exec(agent, execToken, {
      cmd: 'read line; echo "$line"; exit 3',
      stdin: 'STDIN_SECRET_1\n',
      env: { API_KEY: 'ENV_SECRET_1' },
    });
    const procToken = mintCapabilityToken({
      key: agent.key,
      issuer: TEST_ISSUER,
      subject: 'usr_owner',
      actor: { sub: 'agt_helper' },
      sandboxId: agent.ctx.sandboxId,
      scopes: ['process'],
      ttlSeconds: 300,
    }).token;
    const started = await call(agent, procToken, 'POST', '/v1/processes', {
      argv: ['sh', '-c', 'exit 0', 'background'],
      env: { OTHER: 'ENV_SECRET_2' },
    });
    expect(started.status).toBe(201);
    const wsToken = agent.token(['process'], { sub: 'usr_ws' });
    const socket = await TestSocket.authed(`${agent.wsUrl}/v1/exec/ws`, wsToken);
    socket.send({ type: 'start', argv: ['cat'], stdin: 'STDIN_SECRET_3', env: { K: 'ENV_SECRET_3' } });
    await socket.next(ofType('ready'));
    socket.send({ type: 'stdin', data: 'STDIN_SECRET_4', eof: true });
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 0 });
    const codeToken = agent.token(['process'], { sub: 'usr_code' });
    const code = await call(agent, codeToken, 'POST', '/v1/code', {
      language: 'bash',
      code: `echo first line ${'x'.repeat(300)}\necho CODE_SECRET_5`,
    });
    expect(code.status).toBe(200);

    const items = await settledLog(agent, 4);
    expect(items.map((item) => [item.seq, item.route, item.sub, item.act_sub])).toEqual([
      [1, 'exec', 'usr_exec', null],
      [2, 'process', 'usr_owner', 'agt_helper'],
      [3, 'exec_ws', 'usr_ws', null],
      [4, 'code', 'usr_code', null],
    ]);
    expect(items.map((item) => item.jti)).toEqual([execToken, procToken, wsToken, codeToken].map(jtiOf));
    expect(items.map((item) => item.command)).toEqual([
      'read line; echo "$line"; exit 3',
      'sh -c exit 0 background',
      'cat',
      `echo first line ${'x'.repeat(200 - 'echo first line '.length)}`,
    ]);
    expect(items.map((item) => [item.exit_code, item.signal, item.timed_out, item.error])).toEqual([
      [3, null, false, null],
      [0, null, false, null],
      [0, null, false, null],
      [0, null, false, null],
    ]);
    expect(items[3]).toMatchObject({ language: 'bash', exit_status: 'ok' });
    expect(items[0]).toMatchObject({ language: null, exit_status: null });
    for (const item of items) {
      const duration = Date.parse(item.ended_at ?? '') - Date.parse(item.started_at);
      expect(item.duration_ms).toBe(duration);
    }
    const text = JSON.stringify(items);
    for (const secret of ['STDIN_SECRET', 'ENV_SECRET', 'CODE_SECRET']) expect(text).not.toContain(secret);
  });

  it('shows a timed-out command, and a refused start with its error code', async () => {
    const token = agent.token(['process'], { sub: 'usr_slow' });
    const slow = await exec(agent, token, { argv: ['sleep', '30'], timeout_ms: 100 });
    expect(slow['timed_out']).toBe(true);
    const code = await call(agent, token, 'POST', '/v1/code', {
      language: 'bash',
      code: 'sleep 30',
      timeout_ms: 100,
    });
    expect(code.body['exit_status']).toBe('timeout');
    const refused = await call(agent, token, 'POST', '/v1/exec', { cmd: 'true', cwd: 'no/such/dir' });
    expect(refused.status).toBe(404);

    // exec and code write the end before they answer: no wait.
    const items = (await readLog(agent, '?limit=500')).items.slice(-3);
    expect(
      items.map((item) => [item.route, item.command, item.timed_out, item.exit_code, item.signal]),
    ).toEqual([
      ['exec', 'sleep 30', true, null, 'SIGTERM'],
      ['code', 'sleep 30', true, null, expect.any(String)],
      ['exec', 'true', false, null, null],
    ]);
    expect(items[1]?.exit_status).toBe('timeout');
    expect(items[2]).toMatchObject({ error: 'NOT_FOUND', sub: 'usr_slow' });
    expect(items[2]?.ended_at).not.toBeNull();
  });

  it('logs the legacy /execute with the interpreter and the first line of the code', async () => {
    const token = agent.token(['process'], { sub: 'usr_legacy' });
    const socket = await TestSocket.open(`${agent.wsUrl}/execute?token=${encodeURIComponent(token)}`);
    socket.send({ code: 'echo legacy\necho LEGACY_SECRET; exit 7' });
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 7 });
    const last = await waitFor(async () => {
      const entry = (await readLog(agent, '?limit=500')).items.at(-1);
      return entry?.route === 'legacy' && entry.ended_at !== null && entry;
    });
    expect(last).toMatchObject({ sub: 'usr_legacy', jti: jtiOf(token), command: '/bin/sh -c echo legacy' });
    expect(last).toMatchObject({ exit_code: 7, timed_out: false });
    expect(JSON.stringify(last)).not.toContain('LEGACY_SECRET');
  });

  it('may be read with fs:ro or process, not with shell alone', async () => {
    await readLog(agent, '', agent.token(['process']));
    await readLog(agent, '', agent.token(['fs:rw']));
    const refused = await call(agent, agent.token(['shell']), 'GET', '/v1/commands/log');
    expect(refused.status).toBe(403);
    expect(ErrorEnvelope.parse(refused.body).error.code).toBe('CAPABILITY_DENIED');
    expect((await call(agent, undefined, 'GET', '/v1/commands/log')).status).toBe(401);
  });

  it.each(['?foo=1', '?limit=0', '?limit=501', '?limit=abc', '?after=-1', '?after=1e3', '?after=1&after=2'])(
    'refuses the query %s with a 400 envelope',
    async (query) => {
      const response = await call(agent, agent.token(['fs:ro']), 'GET', `/v1/commands/log${query}`);
      expect(response.status).toBe(400);
      expect(ErrorEnvelope.parse(response.body).error.code).toBe('BAD_REQUEST');
    },
  );
});

describe('the command log ring', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx, { commandLogSize: 3 })] });
  });
  afterAll(async () => agent.close());

  it('keeps only the newest N entries and pages through them with after and limit', async () => {
    const token = agent.token(['process']);
    for (let n = 1; n <= 5; n += 1) await exec(agent, token, { argv: ['sh', '-c', `exit ${n}`] });

    const all = await readLog(agent);
    expect(all.items.map((item) => [item.seq, item.exit_code])).toEqual([
      [3, 3],
      [4, 4],
      [5, 5],
    ]);
    expect(all.next_after).toBeNull();

    const first = await readLog(agent, '?limit=2');
    expect(first.items.map((item) => item.seq)).toEqual([3, 4]);
    expect(first.next_after).toBe(4);
    const second = await readLog(agent, `?after=${first.next_after}&limit=2`);
    expect(second.items.map((item) => item.seq)).toEqual([5]);
    expect(second.next_after).toBeNull();

    expect((await readLog(agent, '?after=1&limit=1')).items.map((item) => item.seq)).toEqual([3]);
    expect(await readLog(agent, '?after=5')).toEqual({ items: [], next_after: null });
    expect(await readLog(agent, '?after=99')).toEqual({ items: [], next_after: null });
  });
});
