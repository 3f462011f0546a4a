// The hardening settings (docs/security.md, "Hardening"): what the broker parses
// from its environment, and what it hands its local agents.
import { describe, expect, it } from '@jest/globals';
import { AgentEnv, agentEnvRules, parseEnv } from '@sbx/service-kit';
import { loadBrokerConfig } from '../../src/config.js';
import { agentEnvironment } from '../../src/providers/agent-environment.js';

const ALLOWED = 'https://console.example.com';

describe('hardening configuration', () => {
  it('parses the broker settings, with safe defaults', () => {
    const defaults = loadBrokerConfig({});
    expect(defaults.http).toEqual({ corsAllowedOrigins: [], hstsMaxAgeSeconds: 0, trustProxy: false });
    expect(defaults.authFailuresPerMinute).toBe(20);
    const set = loadBrokerConfig({
      CORS_ALLOWED_ORIGINS: 'https://a.example.com, http://localhost:3000/',
      HSTS_MAX_AGE_SECONDS: '600',
      TRUST_PROXY: '1',
      AUTH_FAILURES_PER_MINUTE: '5',
    });
    expect(set.http).toEqual({
      corsAllowedOrigins: ['https://a.example.com', 'http://localhost:3000'],
      hstsMaxAgeSeconds: 600,
      trustProxy: 1,
    });
    expect(loadBrokerConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).http?.trustProxy).toBe(
      '10.0.0.0/8, 127.0.0.1',
    );
    expect(() => loadBrokerConfig({ CORS_ALLOWED_ORIGINS: '*' })).toThrow(/CORS_ALLOWED_ORIGINS/);
    expect(() => loadBrokerConfig({ CORS_ALLOWED_ORIGINS: 'ftp://x.example.com' })).toThrow(
      /not an http\(s\) origin/,
    );
  });

  it("gives local agents the broker's CORS allowlist", () => {
    const record = {
      sandboxId: 'sb_cors',
      tenantId: 't',
      tokenIssuer: 'sbx-broker',
      network: 'off' as const,
    };
    const env = agentEnvironment({
      record,
      workspace: '/srv/sbx/workspaces/sb_cors',
      isolation: 'none',
      bwrapPath: '/usr/bin/bwrap',
      slirp4netnsPath: '/usr/bin/slirp4netns',
      logLevel: 'info',
      allowedOrigins: [ALLOWED],
    });
    const parsed = parseEnv('agent', AgentEnv, env, agentEnvRules);
    expect(parsed.CORS_ALLOWED_ORIGINS).toEqual([ALLOWED]);
    expect(parsed.WS_MAX_UNAUTHENTICATED).toBe(256);
  });
});
