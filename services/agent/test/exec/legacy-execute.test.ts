import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mintCapabilityToken } from '@sbx/tokens';
import { WebSocket } from 'ws';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { startTestAgent, TEST_ISSUER, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';
import { decode } from './exec-test-kit.js';

type Frame = Record<string, unknown>;
const ofType = (type: string) => (frame: Frame) => frame['type'] === type;
const stdoutOf = (socket: TestSocket) =>
  Buffer.concat(
    socket.frames.filter(ofType('stdout')).map((f) => decode(f['data'], f['encoding'])),
  ).toString();

describe('legacy WS /execute?token=', () => {
  let agent: TestAgent;
  const expiredToken = () =>
    mintCapabilityToken({
      key: agent.key,
      issuer: TEST_ISSUER,
      subject: 'usr_test',
      sandboxId: agent.ctx.sandboxId,
      scopes: ['process'],
      ttlSeconds: 60,
      now: () => Date.now() - 3_600_000,
    }).token;
  const connect = async (token: string) =>
    TestSocket.open(`${agent.wsUrl}/execute?token=${encodeURIComponent(token)}`);

  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx, { legacyEndpoints: true })] });
  });
  afterAll(async () => agent.close());

  it('runs the code with the interpreter, streams its output and exits; identity is the token sub', async () => {
    const token = agent.token(['process'], { sub: 'usr_legacy_caller' });
    const socket = await connect(token);
    socket.send({ code: 'import sys\nprint("from python", sys.version_info[0])', user_id: 'usr_impostor' });
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 0 });
    expect(stdoutOf(socket)).toBe('from python 3\n');
    expect((await socket.closed).code).toBe(1000);
    const entries = agent.logs.filter((line) => line.includes('legacy execute'));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toContain('usr_legacy_caller');
    expect(entries[0]).not.toContain('usr_impostor');
    expect(agent.logs.join('')).not.toContain(token);
  });

  it('streams stderr and a failing exit code', async () => {
    const socket = await connect(agent.token(['process']));
    socket.send({ code: 'import sys\nsys.stderr.write("bad\\n")\nsys.exit(3)' });
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 3 });
    const stderr = socket.frames
      .filter(ofType('stderr'))
      .map((f) => decode(f['data'], f['encoding']).toString());
    expect(stderr.join('')).toBe('bad\n');
  });

  it('refuses a body without code with an error frame and 1008', async () => {
    const socket = await connect(agent.token(['process']));
    socket.send({ user_id: 'usr_x' });
    expect(await socket.next(ofType('error'))).toMatchObject({ error: { code: 'BAD_REQUEST' } });
    expect((await socket.closed).code).toBe(1008);
  });

  it.each([
    ['no token', 'none', 'Missing token'],
    ['an expired token', 'expired', 'Token expired'],
    ['a token without the process scope', 'fs-only', 'Invalid token'],
  ])('closes with 1008 "%s"', async (_name, kind, reason) => {
    const token =
      kind === 'expired' ? expiredToken() : kind === 'fs-only' ? agent.token(['fs:rw']) : undefined;
    const socket = await TestSocket.open(
      token === undefined ? `${agent.wsUrl}/execute` : `${agent.wsUrl}/execute?token=${token}`,
    );
    expect(await socket.closed).toEqual({ code: 1008, reason });
  });
});

describe('legacy endpoints off (the default)', () => {
  it('does not serve /execute', async () => {
    const agent = await startTestAgent({ features: (ctx) => [execFeature(ctx)] });
    try {
      const ws = new WebSocket(`${agent.wsUrl}/execute?token=${agent.token(['process'])}`);
      const refused = await new Promise<string>((resolve) => {
        ws.once('error', (err) => resolve(err.message));
        ws.once('open', () => resolve('opened'));
      });
      expect(refused).toContain('404');
    } finally {
      await agent.close();
    }
  });

  it('falls back to the configured interpreter', async () => {
    const agent = await startTestAgent({
      features: (ctx) => [execFeature(ctx, { legacyEndpoints: true, legacyInterpreter: '/bin/sh' })],
    });
    try {
      const socket = await TestSocket.open(`${agent.wsUrl}/execute?token=${agent.token(['process'])}`);
      socket.send({ code: 'echo "shell $((6 * 7))"' });
      expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 0 });
      expect(stdoutOf(socket)).toBe('shell 42\n');
    } finally {
      await agent.close();
    }
  });
});
