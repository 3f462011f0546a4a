import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import {
  FollowExitLine,
  FollowOutputLine,
  ProcessInfo,
  ProcessList,
  ProcessOutputResponse,
  ProcessStartResponse,
} from '@sbx/protocol';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { call, decode, pidsWith, uniqueSleep, waitFor } from './exec-test-kit.js';

const BUFFER_BYTES = 64 * 1024;

/** Reads a `follow=true` response to its end: output lines, then the exit line. */
async function follow(agent: TestAgent, token: string, path: string) {
  const response = await fetch(`${agent.httpUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('application/x-ndjson');
  const lines = (await response.text())
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as unknown);
  const exit = FollowExitLine.parse(lines.at(-1));
  const output = lines.slice(0, -1).map((line) => FollowOutputLine.parse(line));
  const bytesOf = (stream: string) =>
    Buffer.concat(
      output.filter((line) => line.stream === stream).map((line) => decode(line.data, line.encoding)),
    );
  return { exit, output, stdout: bytesOf('stdout'), stderr: bytesOf('stderr') };
}

describe('background processes', () => {
  let agent: TestAgent;
  let token: string;
  const api = async (method: string, path: string, body?: unknown) => call(agent, token, method, path, body);
  const start = async (body: unknown) => {
    const response = await api('POST', '/v1/processes', body);
    expect(response.status).toBe(201);
    return ProcessStartResponse.parse(response.body);
  };
  const info = async (id: string) => ProcessInfo.parse((await api('GET', `/v1/processes/${id}`)).body);
  const untilExited = async (id: string) =>
    waitFor(
      async () => {
        const current = await info(id);
        return current.status === 'exited' && current;
      },
      5000,
      `process ${id} to exit`,
    );

  beforeAll(async () => {
    agent = await startTestAgent({
      features: (ctx) => [execFeature(ctx, { outputBufferBytes: BUFFER_BYTES })],
    });
    token = agent.token(['process']);
  });
  afterAll(async () => agent.close());

  it('runs a process through its life: start, list, stdin, follow, end of file, exit, forget', async () => {
    const started = await start({ argv: ['cat'], tag: 'echo-server' });
    expect(started.process_id).toMatch(/^proc_/);
    expect(started.pid).toBeGreaterThan(1);
    const list = ProcessList.parse((await api('GET', '/v1/processes')).body);
    expect(list.processes.find((p) => p.process_id === started.process_id)).toMatchObject({
      tag: 'echo-server',
      argv: ['cat'],
      status: 'running',
      exit_code: null,
      started_by: 'usr_test',
      stdin_open: true,
    });
    expect((await call(agent, token, 'GET', '/healthz')).body['processes']).toBe(1);

    const following = follow(agent, token, `/v1/processes/${started.process_id}/output?follow=true`);
    const fed = await api('POST', `/v1/processes/${started.process_id}/stdin`, { data: 'hello\n' });
    expect(fed).toMatchObject({ status: 200, body: { written_bytes: 6, stdin_open: true } });
    await waitFor(
      async () => {
        const out = ProcessOutputResponse.parse(
          (await api('GET', `/v1/processes/${started.process_id}/output`)).body,
        );
        return out.stdout?.data === 'hello\n';
      },
      3000,
      'cat to echo',
    );
    const binary = Buffer.from([0xff, 0x00, 0x0a]);
    const last = await api('POST', `/v1/processes/${started.process_id}/stdin`, {
      data: binary.toString('base64'),
      encoding: 'base64',
      eof: true,
    });
    expect(last.body).toMatchObject({ written_bytes: 3, stdin_open: false });

    const followed = await following;
    expect(followed.exit).toEqual({ exit_code: 0, signal: null });
    expect(followed.stdout.equals(Buffer.concat([Buffer.from('hello\n'), binary]))).toBe(true);
    const done = await untilExited(started.process_id);
    expect(done).toMatchObject({ exit_code: 0, signal: null, stdin_open: false, stdout_bytes: 9 });
    expect(done.exited_at).not.toBeNull();
    expect((await api('POST', `/v1/processes/${started.process_id}/stdin`, { data: 'more' })).status).toBe(
      409,
    );
    expect((await call(agent, token, 'GET', '/healthz')).body['processes']).toBe(0);

    expect((await api('DELETE', `/v1/processes/${started.process_id}`)).status).toBe(200);
    expect((await api('GET', `/v1/processes/${started.process_id}`)).status).toBe(404);
  });

  it('signals the whole process group', async () => {
    const marker = uniqueSleep();
    const started = await start({ cmd: `sleep ${marker} & sleep ${marker}; wait` });
    await waitFor(() => pidsWith(`sleep ${marker}`, 'exact').length === 2, 3000, 'both sleeps');
    const signalled = await api('POST', `/v1/processes/${started.process_id}/signal`, { signal: 'SIGTERM' });
    expect(signalled.status).toBe(200);
    expect(await untilExited(started.process_id)).toMatchObject({ exit_code: null, signal: 'SIGTERM' });
    expect(pidsWith(marker)).toEqual([]);
    const again = await api('POST', `/v1/processes/${started.process_id}/signal`, { signal: 'SIGTERM' });
    expect(again.status).toBe(409);
    const unknown = await api('POST', `/v1/processes/${started.process_id}/signal`, { signal: 'SIGBOGUS' });
    expect(unknown.status).toBe(400);
  });

  it('DELETE kills the process with everything it started and forgets it', async () => {
    const marker = uniqueSleep();
    const started = await start({ cmd: `sleep ${marker} & sleep ${marker} & wait` });
    await waitFor(() => pidsWith(`sleep ${marker}`, 'exact').length === 2, 3000, 'both sleeps');
    const removed = await api('DELETE', `/v1/processes/${started.process_id}`);
    expect(removed.status).toBe(200);
    expect(ProcessInfo.parse(removed.body)).toMatchObject({ status: 'exited', signal: 'SIGKILL' });
    expect(pidsWith(marker)).toEqual([]);
    const list = ProcessList.parse((await api('GET', '/v1/processes')).body);
    expect(list.processes.map((p) => p.process_id)).not.toContain(started.process_id);
    expect((await api('DELETE', `/v1/processes/${started.process_id}`)).status).toBe(404);
  });

  it('keeps the newest output in a bounded buffer, reports what it dropped, and tails it', async () => {
    const expected = Array.from({ length: 30_000 }, (_, i) => `${i + 1}\n`).join('');
    const started = await start({ argv: ['seq', '1', '30000'] });
    const done = await untilExited(started.process_id);
    expect(done).toMatchObject({
      exit_code: 0,
      stdout_bytes: expected.length,
      stdout_dropped_bytes: expected.length - BUFFER_BYTES,
    });
    const all = ProcessOutputResponse.parse(
      (await api('GET', `/v1/processes/${started.process_id}/output`)).body,
    );
    expect(all.stdout).toMatchObject({ encoding: 'utf8', bytes: expected.length });
    expect(all.stdout?.data).toBe(expected.slice(-BUFFER_BYTES));
    const tail = ProcessOutputResponse.parse(
      (await api('GET', `/v1/processes/${started.process_id}/output?stream=stdout&tail=12`)).body,
    );
    expect(tail).toMatchObject({ status: 'exited', exit_code: 0, stdout: { data: expected.slice(-12) } });
    expect(tail.stderr).toBeUndefined();
    const followed = await follow(
      agent,
      token,
      `/v1/processes/${started.process_id}/output?follow=true&tail=6`,
    );
    expect(followed.stdout.toString()).toBe('30000\n');
    expect(followed.exit).toEqual({ exit_code: 0, signal: null });
  });

  it('follows stdout and stderr separately and keeps characters split across writes intact', async () => {
    const started = await start({ cmd: "printf 'caf\\303'; sleep 0.3; printf '\\251\\n'; echo warn >&2" });
    const both = await follow(agent, token, `/v1/processes/${started.process_id}/output?follow=1`);
    expect(both.stdout.toString()).toBe('café\n');
    expect(both.output.every((line) => line.encoding === 'utf8')).toBe(true);
    expect(both.stderr.toString()).toBe('warn\n');
    const errOnly = await follow(
      agent,
      token,
      `/v1/processes/${started.process_id}/output?follow=true&stream=stderr`,
    );
    expect(errOnly.output.map((line) => line.stream)).toEqual(['stderr']);
  });

  it('records a program that cannot start as exited with 127', async () => {
    const started = await start({ argv: ['no-such-program-sbx'] });
    expect(await untilExited(started.process_id)).toMatchObject({ exit_code: 127 });
    const out = ProcessOutputResponse.parse(
      (await api('GET', `/v1/processes/${started.process_id}/output`)).body,
    );
    expect(out.stderr?.data).toContain('command not found');
  });

  it.each([
    ['an unknown process', 'GET', '/v1/processes/proc_nope/output', undefined, 404],
    ['a negative tail', 'GET', '/v1/processes/{id}/output?tail=-1', undefined, 400],
    ['an unknown stream', 'GET', '/v1/processes/{id}/output?stream=stdin', undefined, 400],
    ['stdin with bad base64', 'POST', '/v1/processes/{id}/stdin', { data: '@@', encoding: 'base64' }, 400],
    ['a start without a program', 'POST', '/v1/processes', { tag: 'x' }, 400],
    ['a cwd in /proc', 'POST', '/v1/processes', { argv: ['true'], cwd: '/proc' }, 403],
    ['a cwd that does not exist', 'POST', '/v1/processes', { argv: ['true'], cwd: 'no-such-dir' }, 404],
  ])('refuses %s', async (_name, method, path, body, status) => {
    const running = await start({ argv: ['sleep', '5'] });
    const response = await api(method, path.replace('{id}', running.process_id), body);
    expect(response.status).toBe(status);
    expect(response.body['error']).toBeDefined();
    await api('DELETE', `/v1/processes/${running.process_id}`);
  });
});

describe('retention of exited processes', () => {
  it('forgets an exited process after the retention time', async () => {
    const agent = await startTestAgent({
      features: (ctx) => [execFeature(ctx, { processRetentionMs: 200 })],
    });
    try {
      const token = agent.token(['process']);
      const response = await call(agent, token, 'POST', '/v1/processes', { argv: ['true'] });
      const path = `/v1/processes/${ProcessStartResponse.parse(response.body).process_id}`;
      const exited = await waitFor(
        async () => (await call(agent, token, 'GET', path)).body['status'] === 'exited',
      );
      expect(exited).toBe(true);
      const forgotten = await waitFor(
        async () => (await call(agent, token, 'GET', path)).status === 404,
        3000,
        'the process to be forgotten',
      );
      expect(forgotten).toBe(true);
    } finally {
      await agent.close();
    }
  });
});
