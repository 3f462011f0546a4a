// What the local provider writes for an agent is what the agent parses: both sides share
// one schema (packages/service-kit/src/agent-env.ts).
import { describe, expect, it } from '@jest/globals';
import { AgentEnv, agentEnvRules, parseEnv } from '@sbx/service-kit';
import { agentEnvironment } from '../../src/providers/agent-environment.js';
import type { SandboxRecord } from '../../src/providers/sandbox-layout.js';

const record: SandboxRecord = {
  sandboxId: 'sb_env',
  tenantId: 'tenant_env',
  tokenIssuer: 'sbx-broker',
  network: 'off',
  hostUid: 212_345,
};

function written(overrides: Partial<Parameters<typeof agentEnvironment>[0]> = {}) {
  const env = agentEnvironment({
    record,
    workspace: '/workspace',
    isolation: 'bubblewrap',
    bwrapPath: '/usr/bin/bwrap',
    slirp4netnsPath: '/usr/bin/slirp4netns',
    logLevel: 'info',
    ...overrides,
  });
  return parseEnv('agent', AgentEnv, env, agentEnvRules);
}

describe('the environment the local provider gives an agent', () => {
  it('parses under the agent’s own schema with exactly the sandbox’s settings', () => {
    const parsed = written();
    expect(parsed).toMatchObject({
      SANDBOX_ID: 'sb_env',
      // The key comes through the state directory's descriptor: no path, no value here.
      AGENT_STATE_FD: 3,
      WORKSPACE_ROOT: '/workspace',
      AGENT_LAUNCHER: 'bubblewrap',
      AGENT_SHARED_VIEW: true,
      AGENT_NETWORK: false,
      HOST: '127.0.0.1',
      PORT: 0,
    });
    expect(parsed.SANDBOX_SIGNING_KEY).toBeUndefined();
    expect(parsed.SANDBOX_SIGNING_KEY_FILE).toBeUndefined();
    // The agent already is the sandbox's user in the sandbox's view: nothing to switch to or hide.
    expect(parsed.AGENT_HIDE_PATHS).toBeUndefined();
  });

  it('turns the network on only when the sandbox’s record says so', () => {
    expect(written({ record: { ...record, network: 'on' } }).AGENT_NETWORK).toBe(true);
  });

  it('runs user processes directly without bubblewrap, in the host’s view of the workspace', () => {
    const parsed = written({ isolation: 'none', workspace: '/srv/sbx/workspaces/sb_env' });
    expect(parsed).toMatchObject({ AGENT_LAUNCHER: 'direct', WORKSPACE_ROOT: '/srv/sbx/workspaces/sb_env' });
    expect(parsed.AGENT_SHARED_VIEW).toBe(false);
  });
  it('leaves the agent on JWTs unless given an introspection URL, then opaque tokens through it', () => {
    expect(written()).toMatchObject({ AGENT_TOKEN_FORMAT: 'jwt' });
    expect(written().AGENT_INTROSPECTION_URL).toBeUndefined();
    expect(written({ introspectionUrl: 'http://127.0.0.1:8080/oauth/introspect' })).toMatchObject({
      AGENT_TOKEN_FORMAT: 'opaque',
      AGENT_INTROSPECTION_URL: 'http://127.0.0.1:8080/oauth/introspect',
    });
    expect(() =>
      parseEnv(
        'agent',
        AgentEnv,
        { SANDBOX_ID: 'sb_x', SANDBOX_SIGNING_KEY_FILE: '/k', AGENT_TOKEN_FORMAT: 'opaque' },
        agentEnvRules,
      ),
    ).toThrow(/AGENT_INTROSPECTION_URL/);
  });
});
