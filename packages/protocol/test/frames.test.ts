import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  ExecClientFrame,
  ExecStartFrame,
  ServerFrame,
  ShellClientFrame,
  ShellStartFrame,
  SIGNALS,
  StdinFrame,
  WS_CLOSE_CODES,
  WatchClientFrame,
  WatchEventFrame,
  WatchServerFrame,
} from '../src/index.js';

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, v: unknown): boolean =>
  schema.safeParse(v).success;

describe('client frames', () => {
  it('parses every shell frame', () => {
    const frames = [
      { type: 'auth', token: 't' },
      { type: 'start', cols: 80, rows: 24 },
      { type: 'start', cols: 80, rows: 24, cwd: '/work', env: { TERM: 'xterm' }, shell_session_id: 'sh_1' },
      { type: 'stdin', data: 'ls -la\n' },
      { type: 'stdin', data: 'AAEC/w==', encoding: 'base64' },
      { type: 'resize', cols: 1000, rows: 1 },
      { type: 'signal', signal: 'SIGINT' },
      { type: 'ping' },
      { type: 'ping', id: 'p1' },
      { type: 'close' },
    ];
    for (const frame of frames) expect([frame, ok(ShellClientFrame, frame)]).toEqual([frame, true]);
  });

  it('bounds resize and shell start dimensions to 1..1000 whole numbers', () => {
    for (const [cols, rows] of [
      [0, 24],
      [80, 1001],
      [80.5, 24],
      [-1, 24],
    ]) {
      expect(ok(ShellClientFrame, { type: 'resize', cols, rows })).toBe(false);
      expect(ok(ShellStartFrame, { type: 'start', cols, rows })).toBe(false);
    }
  });

  it('accepts only the closed list of signals', () => {
    for (const signal of SIGNALS) expect(ok(ShellClientFrame, { type: 'signal', signal })).toBe(true);
    for (const signal of ['SIGSEGV', 'INT', 'sigint', 9])
      expect(ok(ShellClientFrame, { type: 'signal', signal })).toBe(false);
  });

  it('checks base64 data only when encoding says base64', () => {
    expect(ok(StdinFrame, { type: 'stdin', data: 'not base64!' })).toBe(true);
    expect(
      StdinFrame.safeParse({ type: 'stdin', data: 'not base64!', encoding: 'base64' }).error?.issues[0]
        ?.message,
    ).toMatch(/not valid base64/);
    expect(ok(StdinFrame, { type: 'stdin', data: 'x', encoding: 'latin1' })).toBe(false);
  });

  it('rejects unknown keys on client frames and bad env names', () => {
    expect(ok(ShellClientFrame, { type: 'ping', id: 'p', extra: 1 })).toBe(false);
    expect(ok(ShellStartFrame, { type: 'start', cols: 80, rows: 24, env: { 'A-B': 'x' } })).toBe(false);
  });

  it('requires exactly one of argv and cmd on exec start', () => {
    expect(ok(ExecStartFrame, { type: 'start', argv: ['ls', '-la'] })).toBe(true);
    expect(ok(ExecStartFrame, { type: 'start', cmd: 'ls -la | wc -l', timeout_ms: 5000, stdin: 'x' })).toBe(
      true,
    );
    expect(
      ExecStartFrame.safeParse({ type: 'start', argv: ['ls'], cmd: 'ls' }).error?.issues[0]?.message,
    ).toBe('give either argv or cmd, not both');
    expect(ExecStartFrame.safeParse({ type: 'start' }).error?.issues[0]?.message).toBe(
      'one of argv or cmd is required',
    );
    expect(ok(ExecStartFrame, { type: 'start', argv: [] })).toBe(false);
    expect(ok(ExecStartFrame, { type: 'start', argv: [''] })).toBe(false);
    expect(ok(ExecStartFrame, { type: 'start', cmd: 'ls', timeout_ms: 0 })).toBe(false);
  });

  it('keeps per-endpoint unions apart', () => {
    expect(ok(ExecClientFrame, { type: 'resize', cols: 80, rows: 24 })).toBe(false);
    expect(ok(ExecClientFrame, { type: 'start', cols: 80, rows: 24 })).toBe(false);
    expect(ok(ShellClientFrame, { type: 'start', cmd: 'ls' })).toBe(false);
    expect(ok(WatchClientFrame, { type: 'start', path: '/work', recursive: true })).toBe(true);
    expect(ok(WatchClientFrame, { type: 'start', path: '' })).toBe(false);
    expect(ok(WatchClientFrame, { type: 'stdin', data: 'x' })).toBe(false);
  });
});

describe('server frames', () => {
  it('parses every server frame', () => {
    const frames = [
      { type: 'auth_ok' },
      { type: 'auth_ok', session_id: 'ssn_1', expires_at: '2026-02-26T12:15:00Z' },
      { type: 'ready', shell_session_id: 'sh_1' },
      { type: 'ready', process_id: 'p_1' },
      { type: 'ready' },
      { type: 'stdout', data: 'total 42\n' },
      { type: 'stderr', data: '/w==', encoding: 'base64' },
      { type: 'exit', code: 0 },
      { type: 'exit', code: 139, signal: 'SIGSEGV' },
      { type: 'pong', id: 'p1' },
      { type: 'error', error: { code: 'CAPABILITY_DENIED', message: 'shell not granted', retryable: false } },
      { type: 'event', event: 'write', path: '/work/a.txt', kind: 'file' },
    ];
    for (const frame of frames) expect([frame, ok(ServerFrame, frame)]).toEqual([frame, true]);
  });

  it('rejects inconsistent server frames', () => {
    expect(ok(ServerFrame, { type: 'ready', shell_session_id: 's', process_id: 'p' })).toBe(false);
    expect(ok(ServerFrame, { type: 'exit', code: 1.5 })).toBe(false);
    expect(ok(ServerFrame, { type: 'exit', code: 0, signal: 'kill' })).toBe(false);
    expect(ok(ServerFrame, { type: 'error', error: { code: 'NOPE', message: 'x', retryable: false } })).toBe(
      false,
    );
    expect(ok(ServerFrame, { type: 'error', message: 'flat errors are not the ErrorBody' })).toBe(false);
  });

  it('requires old_path on rename and only there', () => {
    expect(
      ok(WatchEventFrame, { type: 'event', event: 'rename', path: '/b', old_path: '/a', kind: 'file' }),
    ).toBe(true);
    expect(ok(WatchEventFrame, { type: 'event', event: 'rename', path: '/b', kind: 'file' })).toBe(false);
    expect(
      ok(WatchEventFrame, { type: 'event', event: 'create', path: '/b', old_path: '/a', kind: 'dir' }),
    ).toBe(false);
    expect(ok(WatchEventFrame, { type: 'event', event: 'chmod', path: '/b', kind: 'file' })).toBe(false);
    expect(ok(WatchServerFrame, { type: 'stdout', data: 'x' })).toBe(false);
  });

  it('tolerates fields a newer server adds', () => {
    expect(ok(ServerFrame, { type: 'pong', id: 'p', server_time: 1 })).toBe(true);
  });
});

describe('json schema', () => {
  it('converts every frame union to JSON Schema (for an AsyncAPI/OpenAPI document)', () => {
    for (const schema of [
      ShellClientFrame,
      ExecClientFrame,
      WatchClientFrame,
      ServerFrame,
      WatchServerFrame,
    ]) {
      expect(z.toJSONSchema(schema, { io: 'input' })).toHaveProperty('oneOf');
    }
  });
});

describe('close codes', () => {
  it('has the named codes', () => {
    expect(WS_CLOSE_CODES).toEqual({
      NORMAL: 1000,
      POLICY_VIOLATION: 1008,
      MESSAGE_TOO_BIG: 1009,
      INTERNAL_ERROR: 1011,
      TOKEN_EXPIRED: 4401,
      CAPABILITY_DENIED: 4403,
      SHELL_NOT_FOUND: 4404,
    });
  });
});
