import { describe, expect, it } from '@jest/globals';
import { HttpUrl, Id, Timestamp, WsUrl, toTimestamp } from '../src/index.js';

describe('ids', () => {
  it('accepts the safe charset up to 200 characters', () => {
    for (const id of ['thr_123', 'usr:alice@acme', 'a.b-c', 'x'.repeat(200), '0']) {
      expect(Id.safeParse(id).success).toBe(true);
    }
  });

  it('rejects empty, too long, unsafe characters and dot segments', () => {
    for (const id of ['', 'x'.repeat(201), 'a/b', 'a b', 'a%2F', 'a?b', 'é', '.', '..', 'a\nb']) {
      expect([id, Id.safeParse(id).success]).toEqual([id, false]);
    }
    expect(Id.safeParse('a/b').error?.issues[0]?.message).toMatch(/letters, digits/);
  });

  it('rejects non-strings', () => {
    expect(Id.safeParse(123).success).toBe(false);
  });
});

describe('timestamps', () => {
  it('accepts RFC 3339 with Z or an offset, with or without fractions', () => {
    for (const t of ['2026-02-27T20:20:00Z', '2026-02-27T20:20:00.123Z', '2026-02-27T21:20:00+01:00']) {
      expect(Timestamp.safeParse(t).success).toBe(true);
    }
    expect(Timestamp.parse(toTimestamp(new Date(0)))).toBe('1970-01-01T00:00:00.000Z');
  });

  it('rejects dates without time, local times and epoch numbers', () => {
    for (const t of ['2026-02-27', '2026-02-27T20:20:00', 1740571500, 'tomorrow']) {
      expect(Timestamp.safeParse(t).success).toBe(false);
    }
  });
});

describe('dataplane urls', () => {
  it('keeps http and ws apart', () => {
    expect(HttpUrl.safeParse('https://dp.example.com/v1').success).toBe(true);
    expect(HttpUrl.safeParse('wss://dp.example.com/v1').success).toBe(false);
    expect(WsUrl.safeParse('wss://dp.example.com/v1').success).toBe(true);
    expect(WsUrl.safeParse('https://dp.example.com/v1').success).toBe(false);
    expect(HttpUrl.safeParse('not a url').success).toBe(false);
  });
});
