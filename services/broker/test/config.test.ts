import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@sbx/service-kit';
import { loadBrokerConfig } from '../src/config.js';
import { OPERATOR_SECRETS } from './auth/operator-secrets.js';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadBrokerConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected the configuration to be refused');
}

describe('broker configuration', () => {
  it('runs on embedded defaults with an empty environment', () => {
    const config = loadBrokerConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: undefined,
      redisUrl: undefined,
      provider: 'local',
      localIsolation: 'auto',
      tokenTtlSeconds: 900,
      idleTimeoutSeconds: 900,
      hardTtlSeconds: 28_800,
      rateLimits: { negotiatePerMinute: 600, sessionPerMinute: 6000 },
    });
    expect(config.dataDir).toBe(fileURLToPath(new URL('../../../.data/broker', import.meta.url)));
  });

  it('requires a master key when the database is shared', () => {
    expect(problemsOf({ DATABASE_URL: 'postgres://127.0.0.1/sbx' })).toEqual([
      'BROKER_MASTER_KEY: is required when DATABASE_URL is set',
    ]);
    const masterKey = randomBytes(32).toString('base64url');
    expect(
      loadBrokerConfig({ DATABASE_URL: 'postgres://127.0.0.1/sbx', BROKER_MASTER_KEY: masterKey }).masterKey,
    ).toBe(masterKey);
  });

  it('names every bad variable without echoing values', () => {
    const problems = problemsOf({
      DATABASE_URL: 'mysql://secret-host/db',
      REDIS_URL: 'http://localhost',
      BROKER_BOOTSTRAP_API_KEY: 'hunter2',
      LOCAL_ISOLATION: 'docker',
      OIDC_ISSUER: 'https://issuer.example',
    });
    const names = problems.map((p) => p.split(':')[0]).toSorted();
    expect(names).toEqual(
      [
        'BROKER_BOOTSTRAP_API_KEY',
        'BROKER_MASTER_KEY',
        'DATABASE_URL',
        'LOCAL_ISOLATION',
        'OIDC_AUDIENCE',
        'REDIS_URL',
      ].toSorted(),
    );
    expect(problems.join('\n')).not.toMatch(/hunter2|secret-host/);
  });

  it.each(Object.entries(OPERATOR_SECRETS))(
    'accepts an operator-chosen BROKER_BOOTSTRAP_API_KEY: %s',
    (_name, make) => {
      const secret = make();
      expect(loadBrokerConfig({ BROKER_BOOTSTRAP_API_KEY: secret }).bootstrapApiKey).toBe(secret);
    },
  );

  it.each([
    ['40 times the same letter', 'a'.repeat(40)],
    ['digits in sequence', '0123456789'.repeat(4)],
    ['the alphabet in sequence', 'abcdefghijklmnopqrstuvwxyz0123456789ABCD'],
    ['a short word repeated', 'Password123Password123Password123'],
    ['20 random characters', randomBytes(10).toString('hex')],
    ['a secret with a dot', `${randomBytes(20).toString('hex')}.${randomBytes(4).toString('hex')}`],
  ])('refuses a weak BROKER_BOOTSTRAP_API_KEY, saying how to make one: %s', (_name, secret) => {
    const problems = problemsOf({ BROKER_BOOTSTRAP_API_KEY: secret });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^BROKER_BOOTSTRAP_API_KEY: /);
    expect(problems[0]).toContain('openssl rand -hex 32');
    expect(problems[0]).not.toContain(secret);
  });

  it('takes rate limits per principal from the environment and refuses a zero limit', () => {
    const config = loadBrokerConfig({
      RATE_LIMIT_NEGOTIATE_PER_MINUTE: '30',
      RATE_LIMIT_SESSION_PER_MINUTE: '900',
    });
    expect(config.rateLimits).toEqual({ negotiatePerMinute: 30, sessionPerMinute: 900 });
    expect(problemsOf({ RATE_LIMIT_NEGOTIATE_PER_MINUTE: '0' }).join()).toMatch(
      /RATE_LIMIT_NEGOTIATE_PER_MINUTE/,
    );
  });

  it('sizes the Postgres pool from DATABASE_POOL_SIZE (10 by default) and refuses 0', () => {
    expect(loadBrokerConfig({}).databasePoolSize).toBe(10);
    expect(loadBrokerConfig({ DATABASE_POOL_SIZE: '32' }).databasePoolSize).toBe(32);
    expect(problemsOf({ DATABASE_POOL_SIZE: '0' }).join()).toMatch(/^DATABASE_POOL_SIZE: /);
  });

  it('derives the JWKS URL from the issuer', () => {
    const config = loadBrokerConfig({ OIDC_ISSUER: 'https://auth.example/realm', OIDC_AUDIENCE: 'sbx' });
    expect(config.oidc).toEqual({
      issuer: 'https://auth.example/realm',
      audience: 'sbx',
      jwksUrl: 'https://auth.example/realm/.well-known/jwks.json',
    });
  });
});
