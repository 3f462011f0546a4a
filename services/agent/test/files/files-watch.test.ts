import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import {
  appendFileSync,
  mkdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { WatchEventFrame } from '@sbx/protocol';
import type { TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';
import { eventually, NOT_SERVED, send, Sentinel, startFilesAgent } from './files-test-kit.js';

let agent: TestAgent;
let sentinel: Sentinel;
const open: TestSocket[] = [];

beforeAll(async () => {
  agent = await startFilesAgent({ watchDebounceMs: 30 });
  sentinel = new Sentinel();
});
afterEach(async () => {
  for (const socket of open.splice(0)) {
    socket.close();
    await socket.closed;
  }
});
afterAll(async () => {
  await agent.close();
  sentinel.remove();
});

async function watch(body: { path: string; recursive?: boolean }): Promise<TestSocket> {
  const socket = await TestSocket.authed(`${agent.wsUrl}/v1/files/watch`, agent.token(['fs:ro']));
  open.push(socket);
  socket.send({ type: 'start', ...body });
  await socket.next((frame) => frame['type'] === 'ready' || frame['type'] === 'error');
  return socket;
}

/** Sends a start frame and resolves with the first frame received after it. */
async function answerTo(socket: TestSocket, target: string): Promise<Record<string, unknown>> {
  const seen = socket.frames.length;
  socket.send({ type: 'start', path: target });
  return socket.next((frame) => socket.frames.indexOf(frame) >= seen);
}

function event(socket: TestSocket, expected: Record<string, unknown>): Promise<Record<string, unknown>> {
  return socket.next(
    (frame) =>
      frame['type'] === 'event' && Object.entries(expected).every(([key, value]) => frame[key] === value),
  );
}

function ws(relative: string): string {
  return path.join(agent.workspace, relative);
}

/** What answers name `relative` by: its absolute sandbox path. */
function sb(relative: string): string {
  return `${agent.sandboxWorkspace}/${relative}`;
}

describe('WS /v1/files/watch', () => {
  it('reports writes over HTTP and changes made directly on disk, as valid event frames', async () => {
    const socket = await watch({ path: agent.sandboxWorkspace, recursive: true });
    const rw = agent.token(['fs:rw']);

    await send(agent, { method: 'PUT', path: '/files/docs/a.txt', token: rw, body: 'one' });
    await event(socket, { event: 'create', path: sb('docs'), kind: 'dir' });
    await event(socket, { event: 'create', path: sb('docs/a.txt'), kind: 'file' });

    writeFileSync(ws('docs/b.txt'), 'on disk');
    await event(socket, { event: 'create', path: sb('docs/b.txt'), kind: 'file' });
    appendFileSync(ws('docs/b.txt'), ' and more');
    await event(socket, { event: 'write', path: sb('docs/b.txt') });
    await send(agent, { method: 'PUT', path: '/files/docs/a.txt', token: rw, body: 'two' });
    await event(socket, { event: 'write', path: sb('docs/a.txt'), kind: 'file' });

    renameSync(ws('docs/b.txt'), ws('docs/c.txt'));
    await event(socket, {
      event: 'rename',
      path: sb('docs/c.txt'),
      old_path: sb('docs/b.txt'),
      kind: 'file',
    });
    unlinkSync(ws('docs/c.txt'));
    await event(socket, { event: 'remove', path: sb('docs/c.txt'), kind: 'file' });

    mkdirSync(ws('docs/sub/deeper'), { recursive: true });
    writeFileSync(ws('docs/sub/deeper/x.txt'), 'x');
    await event(socket, { event: 'create', path: sb('docs/sub/deeper/x.txt'), kind: 'file' });
    writeFileSync(ws('docs/sub/deeper/x.txt'), 'changed');
    await event(socket, { event: 'write', path: sb('docs/sub/deeper/x.txt') });

    const events = socket.frames.filter((frame) => frame['type'] === 'event');
    for (const frame of events) expect(WatchEventFrame.safeParse(frame).success).toBe(true);
    expect(events.some((frame) => String(frame['path']).includes('.sbx-upload-'))).toBe(false);
    expect(
      events.filter((frame) => frame['path'] === sb('docs/a.txt') && frame['event'] === 'create'),
    ).toHaveLength(1);
  });

  it('follows a renamed directory: one rename event, then events under its new name', async () => {
    mkdirSync(ws('proj/src'), { recursive: true });
    writeFileSync(ws('proj/src/main.ts'), 'x');
    const socket = await watch({ path: '.', recursive: true });
    renameSync(ws('proj'), ws('proj2'));
    await event(socket, { event: 'rename', path: sb('proj2'), old_path: sb('proj'), kind: 'dir' });
    writeFileSync(ws('proj2/src/new.ts'), 'y');
    await event(socket, { event: 'create', path: sb('proj2/src/new.ts'), kind: 'file' });
    writeFileSync(ws('proj2/src/main.ts'), 'z');
    await event(socket, { event: 'write', path: sb('proj2/src/main.ts') });
    expect(
      socket.frames.some((frame) => frame['event'] === 'create' && frame['path'] === sb('proj2/src/main.ts')),
    ).toBe(false);
  });

  it('watches only the top level without recursive', async () => {
    mkdirSync(ws('flat/inner'), { recursive: true });
    const socket = await watch({ path: 'flat' });
    writeFileSync(ws('flat/inner/hidden.txt'), 'x');
    writeFileSync(ws('flat/seen.txt'), 'x');
    await event(socket, { event: 'create', path: sb('flat/seen.txt') });
    expect(socket.frames.some((frame) => frame['path'] === sb('flat/inner/hidden.txt'))).toBe(false);
  });

  it('watches a single file, ignoring its neighbours', async () => {
    writeFileSync(ws('notes.txt'), 'v1');
    const socket = await watch({ path: 'notes.txt' });
    writeFileSync(ws('neighbour.txt'), 'x');
    await send(agent, { method: 'PUT', path: '/files/notes.txt', token: agent.token(['fs:rw']), body: 'v2' });
    await event(socket, { event: 'write', path: sb('notes.txt'), kind: 'file' });
    expect(socket.frames.some((frame) => frame['path'] === sb('neighbour.txt'))).toBe(false);
  });

  it('reports the removal of the watched directory, then closes normally', async () => {
    mkdirSync(ws('doomed'));
    const socket = await watch({ path: sb('doomed') });
    rmSync(ws('doomed'), { recursive: true });
    await event(socket, { event: 'remove', path: sb('doomed'), kind: 'dir' });
    expect((await socket.closed).code).toBe(1000);
  });

  it('refuses paths the guard refuses, with an error frame, and keeps the connection usable', async () => {
    symlinkSync('/proc/self', ws('proc-link'));
    symlinkSync(path.join(sentinel.dir, 'missing'), ws('broken-link'));
    const socket = await watch({ path: '../outside' });
    expect(socket.frames.at(-1)).toMatchObject({ type: 'error', error: { code: 'BAD_REQUEST' } });
    for (const refused of ['proc-link', '/proc', '/proc/self/fd', `${ws('proc-link')}/task`]) {
      expect(await answerTo(socket, refused)).toMatchObject({
        type: 'error',
        error: { code: 'FORBIDDEN', message: expect.stringMatching(NOT_SERVED) },
      });
    }
    expect(await answerTo(socket, 'broken-link')).toMatchObject({
      type: 'error',
      error: { code: 'NOT_FOUND', message: `${sb('broken-link')} is a broken symbolic link` },
    });
    expect(await answerTo(socket, 'missing-dir')).toMatchObject({
      type: 'error',
      error: { code: 'NOT_FOUND', message: `${sb('missing-dir')} does not exist` },
    });
    expect(await answerTo(socket, '.')).toEqual({ type: 'ready' });
    expect(await answerTo(socket, agent.sandboxWorkspace)).toMatchObject({
      type: 'error',
      error: { code: 'CONFLICT' },
    });
  });

  it('watches a directory outside the workspace, by its absolute path or through a symlink', async () => {
    symlinkSync(sentinel.dir, ws('out-link'));
    const direct = await watch({ path: sentinel.dir });
    expect(direct.frames.at(-1)).toEqual({ type: 'ready' });
    const linked = await watch({ path: 'out-link' });
    expect(linked.frames.at(-1)).toEqual({ type: 'ready' });
    writeFileSync(path.join(sentinel.dir, 'seen.txt'), 'x');
    await event(direct, { event: 'create', path: `${sentinel.dir}/seen.txt`, kind: 'file' });
    await event(linked, { event: 'create', path: sb('out-link/seen.txt'), kind: 'file' });
  });

  it('refuses a recursive watch over more directories than allowed', async () => {
    const limited = await startFilesAgent({ maxWatchedDirectories: 3 });
    try {
      mkdirSync(path.join(limited.workspace, 'a/b/c/d'), { recursive: true });
      const socket = await TestSocket.authed(`${limited.wsUrl}/v1/files/watch`, limited.token(['fs:ro']));
      socket.send({ type: 'start', path: '.', recursive: true });
      const refusal = await socket.next((frame) => frame['type'] === 'error');
      expect(refusal).toMatchObject({
        error: { code: 'BAD_REQUEST', message: expect.stringContaining('more than 3 directories') },
      });
      socket.send({ type: 'start', path: 'a/b' });
      await socket.next((frame) => frame['type'] === 'ready');
      socket.close();
      await socket.closed;
    } finally {
      await limited.close();
    }
  });

  it('counts live watches in /healthz and stops them when the client goes', async () => {
    const watches = async (): Promise<number> => {
      const res = await send(agent, { method: 'GET', path: '/healthz', token: agent.token(['fs:ro']) });
      return (JSON.parse(res.body.toString()) as { file_watches: number }).file_watches;
    };
    const byFrame = await watch({ path: '.' });
    const byHangUp = await watch({ path: agent.sandboxWorkspace });
    expect(await watches()).toBe(2);
    byFrame.send({ type: 'close' });
    expect((await byFrame.closed).code).toBe(1000);
    byHangUp.ws.terminate();
    await eventually(async () => (await watches()) === 0);
  });
});
