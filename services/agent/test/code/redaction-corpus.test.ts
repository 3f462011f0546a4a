import { describe, expect, it } from '@jest/globals';
import { createRedactor, REDACTOR_VERSION } from '../../src/domain/code/redactor.js';
import { NEAR_MISSES, SECRETS, seededRandom } from './secret-corpus.js';

/** Feeds `chunks` through one redactor; the concatenated output and the count of replacements. */
function run(chunks: readonly Buffer[], maxHeldBytes?: number): { out: Buffer; replacements: number } {
  const redactor = createRedactor(maxHeldBytes === undefined ? {} : { maxHeldBytes });
  const parts = chunks.map((chunk) => redactor.write(chunk));
  parts.push(redactor.end());
  return { out: Buffer.concat(parts), replacements: redactor.replacements };
}

function splits(bytes: Buffer): Buffer[][] {
  const ways: Buffer[][] = [[bytes]];
  for (let at = 0; at <= bytes.length; at++) ways.push([bytes.subarray(0, at), bytes.subarray(at)]);
  ways.push([...bytes].map((byte) => Buffer.from([byte])));
  return ways;
}

describe('the streaming redactor on the corpus', () => {
  it('has enough of both, and every kind', () => {
    expect(SECRETS.length).toBeGreaterThanOrEqual(25);
    expect(NEAR_MISSES.length).toBeGreaterThanOrEqual(25);
    expect(new Set(SECRETS.map((secret) => secret.kind))).toEqual(
      new Set(['jwt', 'sbx_api_key', 'sbx_token', 'github', 'slack', 'sk_key', 'aws_access_key', 'bearer']),
    );
    expect(REDACTOR_VERSION).toBe('sbx-redactor/1');
  });

  it.each(SECRETS.map((secret) => [secret.name, secret] as const))(
    'redacts %s however the bytes are split',
    (_name, { before, secret, after, kind }) => {
      const input = Buffer.from(before + secret + after);
      const expected = `${before}[REDACTED:${kind}]${after}`;
      for (const chunks of splits(input)) {
        const { out, replacements } = run(chunks);
        const cut = chunks.length === 2 ? (chunks[0]?.length ?? 0) : chunks.length;
        expect([cut, out.toString('utf8')]).toEqual([cut, expected]);
        expect(replacements).toBe(1);
      }
    },
  );

  it.each(NEAR_MISSES.map((text) => [text] as const))('leaves %j unchanged however split', (text) => {
    const input = Buffer.from(text);
    for (const chunks of splits(input)) {
      const { out, replacements } = run(chunks);
      expect(out.equals(input)).toBe(true);
      expect(replacements).toBe(0);
    }
  });

  it('replaces several secrets of one stream and counts them', () => {
    const text = SECRETS.map((secret) => secret.before + secret.secret + secret.after).join('\n');
    const { out, replacements } = run([Buffer.from(text)]);
    expect(replacements).toBe(SECRETS.length);
    for (const secret of SECRETS) expect(out.toString('utf8')).not.toContain(secret.secret);
  });

  it('holds a long run back only up to its cap, and still finds a secret after it', () => {
    const run100k = 'A'.repeat(100 * 1024);
    const secret = SECRETS.find((candidate) => candidate.kind === 'sk_key')?.secret ?? '';
    const input = Buffer.from(`${run100k}/${secret} done`);
    const redactor = createRedactor({ maxHeldBytes: 4096 });
    let emitted = 0;
    const parts: Buffer[] = [];
    for (let at = 0; at < input.length; at += 1000) {
      const part = redactor.write(input.subarray(at, at + 1000));
      emitted += part.length;
      parts.push(part);
      // never more than the cap (plus the chunk being read) stays inside
      expect(Math.min(at + 1000, input.length) - emitted).toBeLessThanOrEqual(4096 + 1000);
    }
    parts.push(redactor.end());
    expect(Buffer.concat(parts).toString('latin1')).toBe(`${run100k}/[REDACTED:sk_key] done`);
  });
});

describe('the streaming redactor on random input', () => {
  const random = seededRandom(7);
  const randomBytes = (length: number, printable: boolean): Buffer =>
    Buffer.from(
      Array.from({ length }, () =>
        printable ? 0x20 + Math.floor(random() * 95) : Math.floor(random() * 256),
      ),
    );
  const randomChunks = (bytes: Buffer): Buffer[] => {
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = Math.floor(random() ** 3 * 300);
      chunks.push(bytes.subarray(at, at + size));
      at += size;
    }
    return chunks;
  };

  it('gives back ASCII and binary input unchanged, byte for byte, however it is split', () => {
    for (let round = 0; round < 200; round++) {
      const input = randomBytes(Math.floor(random() * 4000), round % 2 === 0);
      expect(run([input]).replacements).toBe(0);
      const { out, replacements } = run(randomChunks(input), round % 3 === 0 ? 64 : undefined);
      expect(out.equals(input)).toBe(true);
      expect(replacements).toBe(0);
    }
  });

  it('gives back UTF-8 split inside its characters unchanged', () => {
    const input = Buffer.from('héllo wörld ✓ 😀 '.repeat(50) + NEAR_MISSES.join('\n'));
    for (let round = 0; round < 50; round++) expect(run(randomChunks(input)).out.equals(input)).toBe(true);
  });

  it('redacts the same whatever the chunking when secrets sit among random bytes', () => {
    for (let round = 0; round < 100; round++) {
      const pieces: Buffer[] = [];
      for (let i = 0; i < 6; i++) {
        const secret = SECRETS[Math.floor(random() * SECRETS.length)];
        pieces.push(
          randomBytes(Math.floor(random() * 200), round % 2 === 0),
          Buffer.from(` ${secret?.before ?? ''}`),
        );
        pieces.push(Buffer.from(`${secret?.secret ?? ''}${secret?.after ?? ''} `));
      }
      const input = Buffer.concat(pieces);
      const whole = run([input]);
      expect(whole.replacements).toBeGreaterThanOrEqual(6);
      const chunked = run(randomChunks(input));
      expect(chunked.out.equals(whole.out)).toBe(true);
      expect(chunked.replacements).toBe(whole.replacements);
    }
  });
});
