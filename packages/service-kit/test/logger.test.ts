import { describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import { createLogger, prettyDestination } from '../src/index.js';

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

describe('logger formats', () => {
  /** A logger writing pino-pretty's lines, without colours, to a stream the test reads. */
  async function prettyLogger(): Promise<{ log: ReturnType<typeof createLogger>; text: () => string }> {
    const out = capture();
    const destination = await prettyDestination(out.stream, { colorize: false });
    return { log: createLogger({ service: 'test', level: 'info', destination }), text: out.lines };
  }

  it('JSON unless asked otherwise: one object per line, the message in msg', () => {
    const out = capture();
    const log = createLogger({ service: 'test', level: 'info', destination: out.stream });
    log.info({ url: 'http://127.0.0.1:1' }, 'broker listening');
    const record = JSON.parse(out.lines()) as Record<string, unknown>;
    expect(record).toMatchObject({
      msg: 'broker listening',
      level: 30,
      name: 'test',
      url: 'http://127.0.0.1:1',
    });
  });

  it('pretty: a line a person reads, not JSON, with the level, the service and the message', async () => {
    const { log, text } = await prettyLogger();
    log.info({ url: 'http://127.0.0.1:1' }, 'broker listening');
    const [first, ...rest] = text().split('\n');
    expect(() => JSON.parse(first ?? '')).toThrow(SyntaxError);
    expect(first).toMatch(/^\[[\d:.]+\] INFO \(test\): broker listening$/);
    expect(rest.join('\n')).toContain('url: "http://127.0.0.1:1"');
  });

  it('pretty: tokens in fields, headers, URLs, messages and errors are redacted all the same', async () => {
    const { log, text } = await prettyLogger();
    log.info(
      { req: { url: `/execute?token=${JWT}&room=r1`, headers: { authorization: `Bearer ${JWT}` } } },
      'request',
    );
    log.info({ token: JWT, body: { current_token: JWT, access_token: JWT } }, 'refresh');
    log.info(`client sent Bearer ${JWT}`);
    log.warn({ url: 'https://sbx.example/files/a.txt?sig=abcdef123&exp=99' }, 'signed url used');
    log.error(
      { err: new Error(`verify failed for ${JWT}`, { cause: new Error('key sbk_abcdefghijkl leaked') }) },
      'boom',
    );
    const written = text();
    expect(written).not.toContain(JWT);
    expect(written).not.toContain('abcdef123');
    expect(written).not.toContain('sbk_abcdefghijkl');
    expect(written).toContain('room=r1');
    expect(written).toContain('verify failed for');
    expect(written).toContain('[REDACTED]');
    expect(written).toMatch(/ERROR \(test\): boom/);
  });
});
