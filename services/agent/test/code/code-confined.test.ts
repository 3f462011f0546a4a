import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { pidsWith, uniqueSleep, waitFor } from '../exec/exec-test-kit.js';
import { runCode } from './code-test-kit.js';

const CANARY = 'SBX_CODE_CONFINED_CANARY';

describe('POST /v1/code inside bubblewrap', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    process.env[CANARY] = 'leaked-canary-value';
    agent = await startTestAgent({
      features: (ctx) => [execFeature(ctx, { killGraceMs: 300 })],
      confined: { network: false },
    });
  });
  afterAll(async () => {
    delete process.env[CANARY];
    await agent.close();
  });

  it('runs each language from stdin, in the workspace, with its own environment only', async () => {
    const python = await runCode(agent, {
      language: 'python',
      code: 'import os\nprint(os.getcwd(), os.environ["HOME"], os.environ.get("SBX_CODE_CONFINED_CANARY"))',
    });
    // The workspace is bound at its own path in a sandbox started alone (the local provider's is /workspace).
    const workspace = agent.sandboxWorkspace;
    expect(workspace).toBe(agent.workspace);
    expect(python).toMatchObject({ exit_status: 'ok', stdout: `${workspace} ${workspace} None\n` });
    const javascript = await runCode(agent, { language: 'javascript', code: 'console.log(process.cwd())' });
    expect(javascript).toMatchObject({ exit_status: 'ok', stdout: `${workspace}\n` });
    const bash = await runCode(agent, {
      language: 'bash',
      code: 'cat; echo "$PWD ${SBX_CODE_CONFINED_CANARY:-absent}"',
    });
    expect(bash).toMatchObject({ exit_status: 'ok', stdout: `${workspace} absent\n` });
  });

  it('answers oom under the memory limit and keeps serving', async () => {
    const eater = 'chunks = []\nwhile True:\n    chunks.append(bytearray(1024 * 1024))\n';
    const oom = await runCode(agent, { language: 'python', code: eater, memory_limit_mb: 64 });
    expect(oom.exit_status).toBe('oom');
    const node = 'const a = [];\nfor (;;) a.push(new Array(100000).fill(Math.random()));\n';
    expect(
      (await runCode(agent, { language: 'javascript', code: node, memory_limit_mb: 64 })).exit_status,
    ).toBe('oom');
    expect(await runCode(agent, { language: 'python', code: 'print("alive")' })).toMatchObject({
      stdout: 'alive\n',
    });
  });

  it('kills the snippet and its background child on timeout', async () => {
    const marker = uniqueSleep();
    const code = `sleep ${marker} &\nwhile true; do sleep 0.05; done`;
    const result = await runCode(agent, { language: 'bash', code, timeout_ms: 500 });
    expect(result.exit_status).toBe('timeout');
    expect(await waitFor(() => pidsWith(marker).length === 0, 3000, 'the group to be gone')).toBe(true);
  });
});
