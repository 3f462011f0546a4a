import { describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import { createLogger } from '../src/index.js';

const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6InNieC1jYXArand0In0.eyJzdWIiOiJ1c3JfMSIsImF1ZCI6InNiXzEifQ.c2lnbmF0dXJlLWJ5dGVz';

function capture(): { lines: () => string; stream: Writable } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines: () => chunks.join(''), stream };
}

describe('logger redaction', () => {
  it('never writes an Authorization header, a token field or a ?token= value', () => {
    const out = capture();
    const log = createLogger({ service: 'test', level: 'info', destination: out.stream });
    log.info(
      {
        req: {
          method: 'GET',
          url: `/execute?token=${JWT}&room=r1`,
          headers: { authorization: `Bearer ${JWT}` },
        },
      },
      'request',
    );
    log.info({ token: JWT, body: { current_token: JWT, access_token: JWT } }, 'refresh');
    log.info(`client sent Bearer ${JWT}`);
    log.warn({ url: 'https://sbx.example/files/a.txt?sig=abcdef123&exp=99' }, 'signed url used');
    const text = out.lines();
    expect(text).not.toContain(JWT);
    expect(text).not.toContain('abcdef123');
    expect(text).toContain('room=r1');
    expect(text).toContain('[REDACTED]');
    expect(text.trim().split('\n')).toHaveLength(4);
  });

  it('scrubs tokens from error messages and causes but keeps the error readable', () => {
    const out = capture();
    const log = createLogger({ service: 'test', level: 'info', destination: out.stream });
    const err = new Error(`verify failed for ${JWT}`, { cause: new Error(`key sbk_abcdefghijkl leaked`) });
    log.error({ err }, 'boom');
    const text = out.lines();
    expect(text).not.toContain(JWT);
    expect(text).not.toContain('sbk_abcdefghijkl');
    expect(text).toContain('verify failed for');
  });
});
