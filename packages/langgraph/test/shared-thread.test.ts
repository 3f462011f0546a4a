// A human and an agent, one sandbox: a deep agent (scripted fake model, no network) writes
// and runs report.py in thread T; a human on the same thread (actor `human`, shell token)
// sees the file and its output in a shell and edits it; the agent's next turn reads the edit.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { MemorySaver } from '@langchain/langgraph';
import { BrokerSession } from '@sbx/client';
import { createDeepAgent } from 'deepagents';
import { SbxSandbox, sandboxWithStateRoutes, workspacePrompt } from '../src/index.js';
import { recordShell, startTestBroker, type TestBroker } from './support.js';

const SLOW = 120_000;
const T = 'thr_shared_report';
let tb: TestBroker;
let backend: SbxSandbox;

/** The content of the tool message answering the call named `tool` (the last such one). */
function toolOutput(messages: BaseMessage[], tool: string): string {
  const found = messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m) && m.name === tool).at(-1);
  if (found === undefined) throw new Error(`no ${tool} result among ${messages.length} messages`);
  return found.text;
}

beforeAll(async () => {
  tb = await startTestBroker();
  backend = await SbxSandbox.create({ broker: tb.broker, perThread: true });
}, SLOW);

afterAll(async () => {
  await backend?.close();
  await tb?.close();
}, SLOW);

describe('a human and an agent in one sandbox', () => {
  it(
    'agent writes and runs report.py; the human sees and edits it; the agent reads the edit',
    async () => {
      const ws = await backend.workspacePathFor(T);
      const report = `${ws}/report.py`;
      const model = fakeModel()
        .respondWithTools([
          { name: 'write_file', args: { file_path: report, content: 'print("total:", 1 + 2)\n' } },
        ])
        .respondWithTools([{ name: 'execute', args: { command: 'python3 report.py | tee report.log' } }])
        .respond(new AIMessage('report.py prints the total.'))
        .respondWithTools([{ name: 'read_file', args: { file_path: report } }])
        .respondWithTools([{ name: 'execute', args: { command: 'python3 report.py' } }])
        .respond(new AIMessage('You changed the sum; it now prints 42.'));
      const agent = createDeepAgent({
        model,
        backend: sandboxWithStateRoutes(backend),
        systemPrompt: workspacePrompt(ws),
        checkpointer: new MemorySaver(),
      });
      const config = { configurable: { thread_id: T } };

      const first = await agent.invoke(
        { messages: [new HumanMessage('Write report.py and run it.')] },
        config,
      );
      expect(toolOutput(first.messages, 'execute')).toMatch(/total: 3/);
      expect(model.calls[0]?.messages[0]?.text).toContain(`workspace is ${ws}`);

      // The human joins thread T's sandbox (attach only: it must be the agent's) with a shell.
      const human = await BrokerSession.get(tb.broker, {
        scope: { type: 'thread', id: T },
        actor: { type: 'human', id: 'usr_alice' },
      });
      try {
        const shell = await human.sandbox().openShell({ cols: 120, rows: 30 });
        const screen = recordShell(shell);
        shell.write('cat report.py report.log; echo SEEN-$((40+2))\n');
        await screen.until(/SEEN-42/);
        expect(screen.text()).toContain('print("total:", 1 + 2)');
        expect(screen.text()).toMatch(/total: 3/);
        shell.write(`printf 'print("total:", 40 + 2)\\n' > report.py; echo EDITED-$((1+1))\n`);
        await screen.until(/EDITED-2/);
        shell.write('exit\n');
        await shell.exited;
      } finally {
        await human.release();
      }

      const second = await agent.invoke({ messages: [new HumanMessage('Run it again.')] }, config);
      expect(toolOutput(second.messages, 'read_file')).toContain('print("total:", 40 + 2)');
      expect(toolOutput(second.messages, 'execute')).toMatch(/total: 42/);
      expect(second.messages.at(-1)?.text).toBe('You changed the sum; it now prints 42.');
    },
    SLOW,
  );
});
