// The client policy's injected environment (AGENT_SANDBOX_ENV_FILE, read through the
// real file adapter): every door that starts a user process, exec and shells, sees the
// same variables; a request's own variables win; HOME stays the workspace; execute_code
// (`/v1/code`) is pure compute and sees none of them; a changed file applies to the next
// process without a restart.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '@sbx/service-kit';
import { sandboxEnvironmentFile } from '../../src/adapters/sandbox-env-file.js';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { runCode } from '../code/code-test-kit.js';
import { ShellClient } from '../shells/shell-client.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { call } from './exec-test-kit.js';

const dir = mkdtempSync(path.join(tmpdir(), 'sbx-sandbox-env-'));
const envFile = path.join(dir, 'sandbox-env.json');
const writeEnv = (variables: Record<string, unknown>): void => {
  writeFileSync(`${envFile}.tmp`, JSON.stringify(variables));
  renameSync(`${envFile}.tmp`, envFile);
};

describe('injected sandbox environment', () => {
  let agent: TestAgent;
  beforeAll(async () => {
    writeEnv({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9000', HOME: '/root', 'bad-name': 'x' });
    agent = await startTestAgent({
      features: (ctx) => [execFeature(ctx), shellsFeature(ctx)],
      sandboxEnv: sandboxEnvironmentFile(envFile, createLogger({ service: 'test', level: 'silent' })),
    });
  });
  afterAll(async () => {
    await agent.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const exec = async (cmd: string, env?: Record<string, string>): Promise<string> => {
    const res = await call(agent, agent.token(['process']), 'POST', '/v1/exec', { cmd, env });
    expect(res.status).toBe(200);
    return String(res.body['stdout']);
  };

  it('reaches exec with HOME kept as the workspace; the request’s own variables win', async () => {
    expect(await exec('echo "$ANTHROPIC_BASE_URL|$HOME"')).toBe(
      `http://127.0.0.1:9000|${agent.sandboxWorkspace}\n`,
    );
    expect(await exec('echo "$ANTHROPIC_BASE_URL"', { ANTHROPIC_BASE_URL: 'mine' })).toBe('mine\n');
  });

  it('reaches a shell', async () => {
    const shell = await ShellClient.start(`${agent.wsUrl}/v1/shell/ws`, agent.token(['shell']));
    shell.type('echo "seen:$ANTHROPIC_BASE_URL"');
    expect(await shell.waitFor(/^seen:.*$/m)).toMatch(/^seen:http:\/\/127\.0\.0\.1:9000$/m);
    shell.close();
  });

  it('stays out of execute_code', async () => {
    const result = await runCode(agent, {
      language: 'python',
      code: 'import os\nprint(os.environ.get("ANTHROPIC_BASE_URL"))',
    });
    expect(result.stdout).toBe('None\n');
  });

  it('applies a changed file to the next process', async () => {
    writeEnv({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9001' });
    expect(await exec('echo "$ANTHROPIC_BASE_URL"')).toBe('http://127.0.0.1:9001\n');
  });
});
