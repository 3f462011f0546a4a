// What the local provider writes for an agent is what the agent parses: both sides share
// one schema (packages/service-kit/src/agent-env.ts).
import { describe, expect, it } from '@jest/globals';
import { AgentEnv, agentEnvRules, parseEnv } from '@sbx/service-kit';
import { agentEnvironment } from '../../src/providers/agent-environment.js';
import { sandboxPaths, type SandboxRecord } from '../../src/providers/sandbox-layout.js';

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
    paths: sandboxPaths('/srv/sbx', record.sandboxId),
    isolation: 'bubblewrap',
    bwrapPath: '/usr/bin/bwrap',
    slirp4netnsPath: '/usr/bin/slirp4netns',
    hiddenPaths: ['/srv/sbx', '/etc/sbx'],
    cgroups: ['/sys/fs/cgroup/pids/sbx/sb_env', '/sys/fs/cgroup/memory/sbx/sb_env'],
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
      SANDBOX_SIGNING_KEY_FILE: '/srv/sbx/sandboxes/sb_env/agent.key',
      WORKSPACE_ROOT: '/srv/sbx/workspaces/sb_env',
      AGENT_LAUNCHER: 'bubblewrap',
      AGENT_NETWORK: false,
      AGENT_RUN_AS_UID: 212_345,
      AGENT_RUN_AS_GID: 212_345,
      AGENT_HIDE_PATHS: '/srv/sbx:/etc/sbx',
      AGENT_CGROUPS: '/sys/fs/cgroup/pids/sbx/sb_env:/sys/fs/cgroup/memory/sbx/sb_env',
      HOST: '127.0.0.1',
      PORT: 0,
    });
    expect(parsed.SANDBOX_SIGNING_KEY).toBeUndefined();
  });

  it('turns the network on only when the sandbox’s record says so', () => {
    expect(written({ record: { ...record, network: 'on' } }).AGENT_NETWORK).toBe(true);
  });

  it('runs user processes directly, still as the sandbox’s own user, without bubblewrap', () => {
    const parsed = written({ isolation: 'none' });
    expect(parsed).toMatchObject({ AGENT_LAUNCHER: 'direct', AGENT_RUN_AS_UID: 212_345 });
    expect(parsed.AGENT_HIDE_PATHS).toBeUndefined();
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
