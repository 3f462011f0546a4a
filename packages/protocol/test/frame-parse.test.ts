import { describe, expect, it } from '@jest/globals';
import {
  clientFrameTypes,
  ErrorBody,
  parseClientFrame,
  parseServerFrame,
  utf8ByteLength,
} from '../src/index.js';

describe('parseClientFrame', () => {
  it('returns the typed frame on success', () => {
    const result = parseClientFrame('exec', '{"type":"start","argv":["ls","-la"]}');
    expect(result).toEqual({ ok: true, frame: { type: 'start', argv: ['ls', '-la'] } });
  });

  it('reports malformed JSON without throwing', () => {
    const result = parseClientFrame('shell', '{"type":"stdin",');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toBe('malformed_json');
    expect(result.close_code).toBe(1008);
    expect(ErrorBody.parse(result.error)).toEqual({
      code: 'BAD_REQUEST',
      message: 'frame is not valid JSON',
      retryable: false,
    });
  });

  it('reports an unknown type, and a type the endpoint does not speak', () => {
    const unknown = parseClientFrame('shell', '{"type":"launch"}');
    expect(unknown).toMatchObject({
      ok: false,
      reason: 'unknown_type',
      frame_type: 'launch',
      message: 'unknown frame type "launch"; expected one of auth, start, stdin, resize, signal, ping, close',
    });
    const elsewhere = parseClientFrame('watch', '{"type":"stdin","data":"x"}');
    expect(elsewhere).toMatchObject({
      ok: false,
      reason: 'unknown_type',
      frame_type: 'stdin',
      message: 'frame type "stdin" is not accepted on the watch endpoint',
    });
  });

  it('reports missing fields as a schema violation naming the field', () => {
    const result = parseClientFrame('shell', '{"type":"resize","cols":80}');
    expect(result).toMatchObject({ ok: false, reason: 'invalid_frame', frame_type: 'resize' });
    if (result.ok) return;
    expect(result.message).toMatch(/^invalid "resize" frame: rows /);
    expect(result.issues.map((i) => i.path)).toEqual(['rows']);
    expect(result.error.code).toBe('BAD_REQUEST');
    expect(result.error.details).toEqual({ issues: result.issues });
  });

  it('rejects exec start with both argv and cmd', () => {
    const result = parseClientFrame('exec', '{"type":"start","argv":["ls"],"cmd":"ls"}');
    expect(result).toMatchObject({
      ok: false,
      reason: 'invalid_frame',
      frame_type: 'start',
      message: 'invalid "start" frame: cmd give either argv or cmd, not both',
    });
  });

  it('rejects JSON that is not an object or has no string type', () => {
    for (const raw of ['42', '[]', 'null', '"auth"', '{}', '{"type":7}']) {
      expect([raw, parseClientFrame('shell', raw)]).toEqual([
        raw,
        expect.objectContaining({ ok: false, reason: 'invalid_frame' }),
      ]);
    }
  });

  it('refuses frames over the byte limit with 1009', () => {
    const raw = JSON.stringify({ type: 'stdin', data: 'é'.repeat(600) });
    expect(parseClientFrame('shell', raw).ok).toBe(true);
    const result = parseClientFrame('shell', raw, { maxBytes: 1000 });
    expect(result).toMatchObject({
      ok: false,
      reason: 'too_big',
      close_code: 1009,
      error: { code: 'PAYLOAD_TOO_LARGE' },
    });
  });

  it('never throws, whatever the input', () => {
    for (const raw of [
      '',
      ' ',
      '{"type":"__proto__"}',
      '{"type":"start","__proto__":{"argv":["x"]}}',
      '\u0000',
    ]) {
      expect(() => parseClientFrame('exec', raw)).not.toThrow();
      expect(parseClientFrame('exec', raw).ok).toBe(false);
    }
  });

  it('types the frame per endpoint (checked by tsc)', () => {
    const result = parseClientFrame('exec', '{"type":"start","cmd":"ls"}');
    const cmd: string | undefined = result.ok && result.frame.type === 'start' ? result.frame.cmd : undefined;
    expect(cmd).toBe('ls');
  });

  it('lists the frame types per endpoint', () => {
    expect(clientFrameTypes('shell')).toEqual([
      'auth',
      'start',
      'stdin',
      'resize',
      'signal',
      'ping',
      'close',
    ]);
    expect(clientFrameTypes('exec')).toEqual(['auth', 'start', 'stdin', 'signal', 'ping', 'close']);
    expect(clientFrameTypes('watch')).toEqual(['auth', 'start', 'ping', 'close']);
  });
});

describe('parseServerFrame', () => {
  it('parses server frames per endpoint', () => {
    expect(parseServerFrame('shell', '{"type":"auth_ok","session_id":"ssn_1"}')).toEqual({
      ok: true,
      frame: { type: 'auth_ok', session_id: 'ssn_1' },
    });
    expect(parseServerFrame('watch', '{"type":"stdout","data":"x"}')).toMatchObject({
      ok: false,
      reason: 'unknown_type',
    });
  });
});

describe('utf8ByteLength', () => {
  it('matches TextEncoder', () => {
    for (const text of ['', 'abc', 'é', '€', '😀', 'a\uD800b', '\uDC00']) {
      expect(utf8ByteLength(text)).toBe(new TextEncoder().encode(text).length);
    }
  });
});
