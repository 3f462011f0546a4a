// The `execute_code` LangChain tool in a deep agent driven by a scripted model (no network):
// the code runs in the sandbox of the run's thread through a real broker and real agents,
// the model receives the result as JSON, and a tenant whose cap is 0 gets SandboxCapExceeded.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { MemorySaver } from '@langchain/langgraph';
import { BrokerClient } from '@sbx/client';
import { ExecuteCodeResult } from '@sbx/protocol';
import { createDeepAgent } from 'deepagents';
import { SbxSandbox, createExecuteCodeTool, sandboxWithStateRoutes, workspacePrompt } from '../src/index.js';
import { startTestBroker, type TestBroker } from './support.js';

const SLOW = 120_000;
const AGENT_SCOPES = ['read:sandbox', 'write:sandbox', 'exec:sandbox'];
let tb: TestBroker;

/** A broker client with an agent's key (exec:sandbox) of `tenantId` (default: the harness's). */
async function agentBroker(tenantId?: string): Promise<BrokerClient> {
  const apiKey = await tb.real.harness.apiKey({
    scopes: AGENT_SCOPES,
    principalType: 'agent',
    ...(tenantId === undefined ? {} : { tenantId }),
  });
  return new BrokerClient({ baseUrl: tb.url, apiKey });
}

/** The tool messages the model was given on its call `index` (the scripted model records them). */
function toolMessagesSeen(model: ReturnType<typeof fakeModel>, index: number): ToolMessage[] {
  const messages: BaseMessage[] = model.calls[index]?.messages ?? [];
  return messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m) && m.name === 'execute_code');
}

beforeAll(async () => {
  tb = await startTestBroker();
}, SLOW);

afterAll(async () => {
  await tb?.close();
}, SLOW);

describe('createExecuteCodeTool', () => {
  it(
    "runs python in the run's thread sandbox; the model reads stdout in the tool message",
    async () => {
      const thread = `thr_${randomUUID()}`;
      const model = fakeModel()
        .respondWithTools([
          { name: 'execute_code', args: { code: 'open("n.txt", "w").write("7")\nprint("saved")' } },
        ])
        .respondWithTools([
          {
            name: 'execute_code',
            args: { code: 'print(int(open("n.txt").read()) * 6)', timeout_ms: 20_000 },
          },
        ])
        .respond(new AIMessage('The answer is 42.'));
      const agent = createDeepAgent({
        model,
        tools: [createExecuteCodeTool({ broker: await agentBroker() })],
        checkpointer: new MemorySaver(),
      });
      const out = await agent.invoke(
        { messages: [new HumanMessage('Compute 7 * 6 in python.')] },
        { configurable: { thread_id: thread } },
      );
      expect(out.messages.at(-1)?.text).toBe('The answer is 42.');

      const [first] = toolMessagesSeen(model, 1);
      const seen = toolMessagesSeen(model, 2);
      expect(seen).toHaveLength(2);
      const saved = ExecuteCodeResult.parse(JSON.parse(first?.text ?? ''));
      const answer = ExecuteCodeResult.parse(JSON.parse(seen[1]?.text ?? ''));
      expect(saved).toMatchObject({ ok: true, exit_status: 'ok', stdout: 'saved\n' });
      // The second call ran in the same sandbox: the thread's, where the first left n.txt.
      expect(answer).toMatchObject({ ok: true, exit_status: 'ok', stdout: '42\n', stderr: '' });
      expect(answer.sandbox_id).toBe(saved.sandbox_id);
      expect(seen[1]?.artifact).toMatchObject({ stdout: '42\n', invocation_id: answer.invocation_id });
    },
    SLOW,
  );

  it(
    "a cap of 0 (the tenant's kill switch) reaches the model as SandboxCapExceeded with resets_at",
    async () => {
      const tenantId = `tenant_${randomUUID()}`;
      const broker = await agentBroker(tenantId);
      const put = await fetch(`${tb.url}/admin/tenants/${tenantId}/policy`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${tb.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ execute_code_daily_cap: 0 }),
      });
      expect(put.status).toBe(200);
      const model = fakeModel()
        .respondWithTools([{ name: 'execute_code', args: { code: 'print(1)' } }])
        .respond(new AIMessage('Code execution is paused for now.'));
      const agent = createDeepAgent({ model, tools: [createExecuteCodeTool({ broker })] });
      await agent.invoke(
        { messages: [new HumanMessage('Run print(1).')] },
        { configurable: { thread_id: `thr_${randomUUID()}` } },
      );

      const [message] = toolMessagesSeen(model, 1);
      const text = message?.text ?? '';
      expect(text).toContain('SandboxCapExceeded');
      expect(text).toContain('resets_at');
      const view: unknown = JSON.parse(text);
      expect(view).toMatchObject({
        ok: false,
        exit_status: 'cap_exceeded',
        error: 'SandboxCapExceeded',
        dimension: 'tenant_daily',
        hint: expect.stringMatching(/capped \(tenant_daily\) until .+; .*tell the user/),
      });
      const result = ExecuteCodeResult.parse(view);
      expect(Date.parse(result.resets_at ?? '')).toBeGreaterThan(Date.now());
      expect(result.sandbox_id).toBeNull();
    },
    SLOW,
  );

  it(
    "shares the thread's sandbox with the SbxSandbox backend: execute_code runs the file write_file wrote",
    async () => {
      const thread = `thr_${randomUUID()}`;
      const backend = await SbxSandbox.create({ broker: tb.broker, perThread: true });
      try {
        const ws = await backend.workspacePathFor(thread);
        const model = fakeModel()
          .respondWithTools([
            { name: 'write_file', args: { file_path: `${ws}/sum.py`, content: 'print("sum:", 40 + 2)\n' } },
          ])
          .respondWithTools([{ name: 'execute_code', args: { code: 'exec(open("sum.py").read())' } }])
          .respond(new AIMessage('It prints 42.'));
        const agent = createDeepAgent({
          model,
          backend: sandboxWithStateRoutes(backend),
          systemPrompt: workspacePrompt(ws),
          tools: [createExecuteCodeTool({ broker: tb.broker })],
        });
        await agent.invoke(
          { messages: [new HumanMessage('Write sum.py and run it.')] },
          { configurable: { thread_id: thread } },
        );
        const [message] = toolMessagesSeen(model, 2);
        expect(JSON.parse(message?.text ?? '')).toMatchObject({ ok: true, stdout: 'sum: 42\n' });
      } finally {
        await backend.close();
      }
    },
    SLOW,
  );

  it(
    "uses the run's pre-negotiated session (configurable.sandbox) through the session route",
    async () => {
      const broker = await agentBroker();
      const negotiated = await broker.ensure({ thread_id: `thr_${randomUUID()}` });
      const tool = createExecuteCodeTool({ broker });
      const text: unknown = await tool.invoke(
        { code: 'echo "$((6 * 7))"', language: 'bash' },
        { configurable: { sandbox: negotiated } },
      );
      expect(JSON.parse(String(text))).toMatchObject({
        ok: true,
        stdout: '42\n',
        sandbox_id: negotiated.binding.sandbox_id,
      });
      await broker.release(negotiated.session_id);
    },
    SLOW,
  );

  it('outside a run and without threadId it has no thread, and says so', async () => {
    const tool = createExecuteCodeTool({ broker: tb.broker });
    await expect(tool.invoke({ code: 'print(1)' })).rejects.toThrow(/execute_code has no thread/);
  });
});
