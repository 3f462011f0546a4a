import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ExecServerFrame } from '@sbx/protocol';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';
import { decode, pidsWith, uniqueSleep, waitFor } from './exec-test-kit.js';

type Frame = Record<string, unknown>;
const ofType = (type: string) => (frame: Frame) => frame['type'] === type;

/** The bytes of every `stream` frame received so far, decoded and in order. */
function streamBytes(socket: TestSocket, stream: 'stdout' | 'stderr'): Buffer {
  return Buffer.concat(
    socket.frames.filter(ofType(stream)).map((frame) => decode(frame['data'], frame['encoding'])),
  );
}

describe('WS /v1/exec/ws', () => {
  let agent: TestAgent;
  let url: string;
  const open = async () => TestSocket.authed(url, agent.token(['process']));

  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx)] });
    url = `${agent.wsUrl}/v1/exec/ws`;
  });
  afterAll(async () => agent.close());

  it('streams a program: ready, stdout and stderr frames, exit, close 1000', async () => {
    const socket = await open();
    socket.send({ type: 'start', cmd: 'echo out; echo err >&2; exit 4', env: { X: '1' } });
    const ready = await socket.next(ofType('ready'));
    expect(ready['process_id']).toMatch(/^proc_/);
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 4 });
    expect(await socket.closed).toEqual({ code: 1000, reason: 'process exited' });
    expect(streamBytes(socket, 'stdout').toString()).toBe('out\n');
    expect(streamBytes(socket, 'stderr').toString()).toBe('err\n');
    for (const frame of socket.frames) expect(ExecServerFrame.safeParse(frame).success).toBe(true);
  });

  it('round-trips arbitrary bytes through stdin → cat → stdout, then close kills the program', async () => {
    const socket = await open();
    socket.send({ type: 'start', argv: ['cat'], stdin: 'héllo ' });
    await socket.next(ofType('ready'));
    const payload = randomBytes(200_000);
    for (let offset = 0; offset < payload.length; offset += 30_001)
      socket.send({
        type: 'stdin',
        data: payload.subarray(offset, offset + 30_001).toString('base64'),
        encoding: 'base64',
      });
    const expected = Buffer.concat([Buffer.from('héllo '), payload]);
    await waitFor(() => streamBytes(socket, 'stdout').length >= expected.length, 10_000, 'all bytes back');
    expect(streamBytes(socket, 'stdout').equals(expected)).toBe(true);
    expect(socket.frames.filter(ofType('stdout')).some((frame) => frame['encoding'] === 'base64')).toBe(true);
    socket.send({ type: 'close' });
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 137, signal: 'SIGKILL' });
    expect((await socket.closed).code).toBe(1000);
  });

  it('keeps text output utf8 when a character is split between two writes', async () => {
    const socket = await open();
    socket.send({ type: 'start', cmd: "printf 'na\\303'; sleep 0.3; printf '\\257ve'" });
    await socket.next(ofType('exit'));
    const stdout = socket.frames.filter(ofType('stdout'));
    expect(stdout.every((frame) => frame['encoding'] === 'utf8')).toBe(true);
    expect(streamBytes(socket, 'stdout').toString()).toBe('naïve');
  });

  it('applies stdin sent right behind start, without waiting for ready', async () => {
    const socket = await open();
    socket.send({ type: 'start', argv: ['cat'], cwd: '.' });
    socket.send({ type: 'stdin', data: 'no wait\n' });
    await waitFor(() => streamBytes(socket, 'stdout').toString() === 'no wait\n', 3000, 'the echo');
    expect(socket.frames.filter(ofType('error'))).toEqual([]);
    socket.send({ type: 'close' });
    expect((await socket.closed).code).toBe(1000);
  });

  it('closes stdin on eof, so a program reading to the end finishes', async () => {
    const socket = await open();
    socket.send({ type: 'start', argv: ['wc', '-c'] });
    socket.send({ type: 'stdin', data: 'twelve bytes' });
    socket.send({ type: 'stdin', data: '!!', eof: true });
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 0 });
    expect(streamBytes(socket, 'stdout').toString().trim()).toBe('14');
  });

  it('delivers signal frames to the program', async () => {
    const socket = await open();
    socket.send({ type: 'start', argv: ['sleep', '30'] });
    await socket.next(ofType('ready'));
    socket.send({ type: 'signal', signal: 'SIGINT' });
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 130, signal: 'SIGINT' });
  });

  it('kills the whole group when timeout_ms passes, saying so', async () => {
    const marker = uniqueSleep();
    const socket = await open();
    socket.send({ type: 'start', cmd: `sleep ${marker} & sleep ${marker}`, timeout_ms: 300 });
    expect(await socket.next(ofType('error'))).toMatchObject({ error: { code: 'TIMEOUT' } });
    expect(await socket.next(ofType('exit'))).toMatchObject({ signal: 'SIGTERM', code: 143 });
    expect(pidsWith(marker)).toEqual([]);
  });

  it('kills the program when the socket closes before it exits', async () => {
    const marker = uniqueSleep();
    const socket = await open();
    socket.send({ type: 'start', cmd: `sleep ${marker} & sleep ${marker}` });
    await socket.next(ofType('ready'));
    await waitFor(() => pidsWith(`sleep ${marker}`, 'exact').length === 2, 3000, 'the program to start');
    socket.close();
    await socket.closed;
    expect(await waitFor(() => pidsWith(marker).length === 0, 3000, 'the program to be killed')).toBe(true);
  });

  it('refuses a second start, and stdin before start, with error frames on an open socket', async () => {
    const early = await open();
    early.send({ type: 'stdin', data: 'x' });
    expect(await early.next(ofType('error'))).toMatchObject({ error: { code: 'BAD_REQUEST' } });
    early.close();

    const socket = await open();
    socket.send({ type: 'start', argv: ['sleep', '30'] });
    await socket.next(ofType('ready'));
    socket.send({ type: 'start', argv: ['true'] });
    expect(await socket.next(ofType('error'))).toMatchObject({ error: { code: 'CONFLICT' } });
    expect(socket.frames.filter(ofType('ready'))).toHaveLength(1);
    socket.send({ type: 'close' });
    expect((await socket.closed).code).toBe(1000);
  });

  it('lets the client start again after a refused start (a cwd in /proc)', async () => {
    const socket = await open();
    socket.send({ type: 'start', argv: ['pwd'], cwd: '/proc/self' });
    expect(await socket.next(ofType('error'))).toMatchObject({ error: { code: 'FORBIDDEN' } });
    expect(socket.frames.filter(ofType('ready'))).toHaveLength(0);
    socket.send({ type: 'start', argv: ['pwd'] });
    expect(await socket.next(ofType('exit'))).toEqual({ type: 'exit', code: 0 });
    expect(streamBytes(socket, 'stdout').toString()).toBe(`${agent.workspace}\n`);
  });

  it('pauses a program whose output the client does not read, and loses nothing', async () => {
    const size = 20_000_011;
    const socket = await open();
    try {
      socket.ws.pause();
      socket.send({ type: 'start', cmd: `head -c ${size} /dev/zero | tr '\\0' a` });
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // Unread, the program is held back by its pipe: still running long after it would have finished.
      expect(pidsWith(`head -c ${size} /dev/zero`, 'exact')).toHaveLength(1);
      socket.ws.resume();
      await socket.next(ofType('exit'), 20_000);
      const stdout = streamBytes(socket, 'stdout');
      expect(stdout.length).toBe(size);
      expect(stdout.every((byte) => byte === 0x61)).toBe(true);
    } finally {
      socket.ws.terminate();
    }
  });

  it('closes with 1000 on a close frame before any start', async () => {
    const socket = await open();
    socket.send({ type: 'close' });
    expect((await socket.closed).code).toBe(1000);
  });
});
