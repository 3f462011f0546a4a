import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ConfigError } from '@sbx/service-kit';
import { loadAgentConfig } from '../src/config.js';

const key = randomBytes(32).toString('base64url');

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadAgentConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected the configuration to be refused');
}

describe('agent configuration', () => {
  it('starts from a sandbox id and an inline key with documented defaults', () => {
    const config = loadAgentConfig({ SANDBOX_ID: 'sb_1', SANDBOX_SIGNING_KEY: key, PORT: '0' });
    expect(config).toMatchObject({
      sandboxId: 'sb_1',
      signingKey: { kind: 'inline', base64url: key },
      tokenIssuer: 'sbx-broker',
      port: 0,
      wsAuthTimeoutMs: 5000,
      legacyEndpoints: false,
    });
  });

  it('refuses a short key without echoing it', () => {
    const short = randomBytes(31).toString('base64url');
    const problems = problemsOf({ SANDBOX_ID: 'sb_1', SANDBOX_SIGNING_KEY: short });
    expect(problems.join('\n')).toMatch(
      /SANDBOX_SIGNING_KEY: must be unpadded base64url encoding at least 32 bytes/,
    );
    expect(problems.join('\n')).not.toContain(short);
  });

  it('refuses a missing key, and both a key and a key file', () => {
    expect(problemsOf({ SANDBOX_ID: 'sb_1' }).join()).toMatch(/exactly one of SANDBOX_SIGNING_KEY/);
    expect(
      problemsOf({
        SANDBOX_ID: 'sb_1',
        SANDBOX_SIGNING_KEY: key,
        SANDBOX_SIGNING_KEY_FILE: '/run/key',
      }).join(),
    ).toMatch(/exactly one of SANDBOX_SIGNING_KEY/);
  });

  it('names every bad variable at once', () => {
    const problems = problemsOf({
      SANDBOX_ID: 'bad id!',
      SANDBOX_SIGNING_KEY: key,
      PORT: '70000',
      AGENT_LEGACY_ENDPOINTS: 'maybe',
    });
    expect(problems.map((p) => p.split(':')[0]).toSorted()).toEqual([
      'AGENT_LEGACY_ENDPOINTS',
      'PORT',
      'SANDBOX_ID',
    ]);
  });
});
