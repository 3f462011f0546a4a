import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { ExecResponse } from '@sbx/protocol';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { call, decode, pidsWith, uniqueSleep, waitFor } from './exec-test-kit.js';

const CANARY = 'SBX_EXEC_TEST_CANARY';

describe('POST /v1/exec', () => {
  let agent: TestAgent;
  let token: string;
  let outside: string;
  const exec = async (body: unknown) => call(agent, token, 'POST', '/v1/exec', body);
  const ok = async (body: unknown) => {
    const response = await exec(body);
    expect(response.status).toBe(200);
    return ExecResponse.parse(response.body);
  };

  beforeAll(async () => {
    // The agent's own environment must never reach a child; this stands in for its signing key.
    process.env[CANARY] = 'leaked';
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx, { killGraceMs: 300 })] });
    token = agent.token(['process']);
    outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-exec-outside-')));
  });
  afterAll(async () => {
    delete process.env[CANARY];
    await agent.close();
    rmSync(outside, { recursive: true, force: true });
  });

  it('runs argv without a shell and cmd with /bin/sh -c', async () => {
    const direct = await ok({ argv: ['printf', '%s|', 'a b', '$HOME', '*'] });
    expect(direct).toMatchObject({ exit_code: 0, signal: null, stdout: 'a b|$HOME|*|', timed_out: false });
    const shell = await ok({ cmd: 'echo $((40 + 2)); echo oops >&2; exit 3' });
    expect(shell).toMatchObject({ exit_code: 3, stdout: '42\n', stderr: 'oops\n', stdout_encoding: 'utf8' });
    expect(shell.stdout_bytes).toBe(3);
    expect(shell.stderr_bytes).toBe(5);
  });

  it.each([
    ['both argv and cmd', { argv: ['true'], cmd: 'true' }],
    ['neither argv nor cmd', { cwd: '.' }],
    ['an empty program name', { argv: [''] }],
    ['an invalid variable name', { argv: ['true'], env: { 'BAD-NAME': 'x' } }],
    ['bad base64 stdin', { argv: ['cat'], stdin: '***', stdin_encoding: 'base64' }],
    ['an unknown field', { argv: ['true'], timeout: 5 }],
  ])('refuses %s with 400', async (_name, body) => {
    const response = await exec(body);
    expect(response.status).toBe(400);
    expect(response.body['error']).toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('answers exit code 127 for a program that does not exist', async () => {
    const result = await ok({ argv: ['no-such-program-sbx'] });
    expect(result.exit_code).toBe(127);
    expect(result.stderr).toContain('no-such-program-sbx: command not found');
  });

  it('starts in a cwd relative to the workspace or absolute, anywhere but /proc', async () => {
    mkdirSync(path.join(agent.workspace, 'sub/inner'), { recursive: true });
    writeFileSync(path.join(agent.workspace, 'sub/file.txt'), 'x');
    symlinkSync(outside, path.join(agent.workspace, 'escape'));
    symlinkSync(path.join(agent.workspace, 'sub'), path.join(agent.workspace, 'alias'));
    symlinkSync('/proc/self', path.join(agent.workspace, 'proc-link'));
    const parent = path.dirname(agent.workspace);
    for (const [cwd, expected] of [
      [undefined, agent.workspace],
      ['sub/inner', `${agent.workspace}/sub/inner`],
      ['alias', `${agent.workspace}/sub`],
      // ".." is resolved from the workspace, as a shell's `cd ..` would.
      ['..', parent],
      ['sub/../..', parent],
      ['escape', outside],
      ['escape/', outside],
      [outside, outside],
      ['/', '/'],
    ] as const) {
      const response = await exec({ argv: ['pwd'], ...(cwd === undefined ? {} : { cwd }) });
      expect({ cwd, status: response.status, stdout: response.body['stdout'] }).toEqual({
        cwd,
        status: 200,
        stdout: `${expected}\n`,
      });
    }
    for (const [cwd, status, code] of [
      ['/proc', 403, 'FORBIDDEN'],
      ['/proc/self/fd', 403, 'FORBIDDEN'],
      ['proc-link', 403, 'FORBIDDEN'],
      ['missing', 404, 'NOT_FOUND'],
      [`${outside}/missing`, 404, 'NOT_FOUND'],
      ['sub/file.txt', 400, 'BAD_REQUEST'],
    ] as const) {
      const response = await exec({ argv: ['pwd'], cwd });
      expect({ cwd, status: response.status, error: response.body['error'] }).toEqual({
        cwd,
        status,
        error: expect.objectContaining({ code }),
      });
    }
  });

  it('gives the child only its own environment: the request env and a minimal base, nothing of the agent', async () => {
    expect(process.env[CANARY]).toBe('leaked');
    const result = await ok({ argv: ['env'], env: { GREETING: 'hello world' } });
    const variables = Object.fromEntries(
      result.stdout
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(Object.keys(variables).toSorted()).toEqual(['GREETING', 'HOME', 'LANG', 'PATH']);
    expect(variables).toMatchObject({ GREETING: 'hello world', HOME: agent.workspace });
    expect(result.stdout).not.toContain('leaked');
  });

  it('feeds stdin, then end of file, as text or as base64 bytes', async () => {
    expect((await ok({ argv: ['wc', '-c'], stdin: 'héllo' })).stdout.trim()).toBe('6');
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const echoed = await ok({ argv: ['cat'], stdin: bytes.toString('base64'), stdin_encoding: 'base64' });
    expect(echoed.stdout_encoding).toBe('base64');
    expect(decode(echoed.stdout, echoed.stdout_encoding).equals(bytes)).toBe(true);
    expect((await ok({ argv: ['cat'] })).stdout).toBe('');
  });

  it('returns binary output as base64, byte for byte', async () => {
    const result = await ok({ cmd: "printf '\\377\\376\\000ok'" });
    expect(result.stdout_encoding).toBe('base64');
    expect([...decode(result.stdout, result.stdout_encoding)]).toEqual([0xff, 0xfe, 0x00, 0x6f, 0x6b]);
  });

  it('keeps the first 256 KiB of stdout and 32 KiB of stderr and counts every byte', async () => {
    const result = await ok({
      cmd: "head -c 1048576 /dev/zero | tr '\\0' a; head -c 100000 /dev/zero | tr '\\0' e >&2",
    });
    expect(result).toMatchObject({
      exit_code: 0,
      stdout_truncated: true,
      stderr_truncated: true,
      stdout_bytes: 1_048_576,
      stderr_bytes: 100_000,
    });
    expect(result.stdout).toBe('a'.repeat(256 * 1024));
    expect(result.stderr).toBe('e'.repeat(32 * 1024));
    const small = await ok({ cmd: 'printf 12345' });
    expect(small).toMatchObject({ stdout_truncated: false, stdout_bytes: 5 });
  });

  it('on timeout kills the whole process group, so nothing is left running', async () => {
    const marker = uniqueSleep();
    // Left alone, the sleeps would run for 900+ s. An answer within a tenth of that (a
    // loaded machine has minutes of room) came from the 300 ms timeout, not from the
    // program ending on its own.
    const sleepsMs = Number(marker) * 1000;
    expect(sleepsMs).toBeGreaterThanOrEqual(900_000);
    const started = Date.now();
    const result = await ok({ cmd: `sleep ${marker} & sleep ${marker}; echo never`, timeout_ms: 300 });
    expect(result).toMatchObject({ timed_out: true, exit_code: null, signal: 'SIGTERM', stdout: '' });
    expect(result.duration_ms).toBeGreaterThanOrEqual(300);
    expect(Date.now() - started).toBeLessThan(sleepsMs / 10);
    expect(pidsWith(marker)).toEqual([]);
  });

  it('follows an ignored SIGTERM with SIGKILL after the grace', async () => {
    const marker = uniqueSleep();
    const result = await ok({ cmd: `trap '' TERM; sleep ${marker} & sleep ${marker}`, timeout_ms: 200 });
    expect(result).toMatchObject({ timed_out: true, signal: 'SIGKILL' });
    expect(result.duration_ms).toBeGreaterThanOrEqual(450);
    expect(pidsWith(marker)).toEqual([]);
  });

  it('kills what the program left behind when it exits', async () => {
    const marker = uniqueSleep();
    const result = await ok({ cmd: `sleep ${marker} > /dev/null 2>&1 & echo started` });
    expect(result).toMatchObject({ exit_code: 0, stdout: 'started\n' });
    expect(await waitFor(() => pidsWith(marker).length === 0, 3000, 'the orphan to be killed')).toBe(true);
  });

  it('kills the program when the caller hangs up', async () => {
    const marker = uniqueSleep();
    const hangUp = new AbortController();
    const pending = fetch(`${agent.httpUrl}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd: `sleep ${marker}` }),
      signal: hangUp.signal,
    }).catch((err: unknown) => err);
    await waitFor(() => pidsWith(marker).length > 0, 3000, 'the program to start');
    hangUp.abort();
    await pending;
    expect(await waitFor(() => pidsWith(marker).length === 0, 3000, 'the program to be killed')).toBe(true);
  });
});
