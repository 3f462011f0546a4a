import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ConfigError, parseEnv } from '../src/index.js';

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  SECRET: z.string().min(10),
  MODE: z.enum(['a', 'b']).default('a'),
});

describe('parseEnv', () => {
  it('applies defaults and coerces', () => {
    expect(parseEnv('svc', schema, { SECRET: 'long-enough-secret' })).toEqual({
      PORT: 8080,
      SECRET: 'long-enough-secret',
      MODE: 'a',
    });
  });

  it('names every bad variable in one error and never echoes a value', () => {
    let caught: unknown;
    try {
      parseEnv('svc', schema, { PORT: 'eighty', SECRET: 'short', MODE: 'c' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as ConfigError).message;
    expect(message).toMatch(/PORT/);
    expect(message).toMatch(/SECRET/);
    expect(message).toMatch(/MODE/);
    expect(message).not.toContain('short');
    expect((caught as ConfigError).problems).toHaveLength(3);
  });

  it('treats an empty variable as unset', () => {
    expect(parseEnv('svc', schema, { SECRET: 'long-enough-secret', PORT: '' }).PORT).toBe(8080);
  });
});
