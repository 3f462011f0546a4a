// deepagents' own files (/large_tool_results/…, /conversation_history/…) lie at the sandbox's
// root, which its user cannot write: routed to LangGraph state, a real run keeps them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { MemorySaver } from '@langchain/langgraph';
import { BrokerSession } from '@sbx/client';
import { createDeepAgent } from 'deepagents';
import { SbxSandbox, sandboxWithStateRoutes } from '../src/index.js';
import { startTestBroker, type TestBroker } from './support.js';

const SLOW = 120_000;
let tb: TestBroker;
let backend: SbxSandbox;

const toolTexts = (messages: BaseMessage[]): string[] =>
  messages.filter((m) => ToolMessage.isInstance(m)).map((m) => m.text);

beforeAll(async () => {
  tb = await startTestBroker();
  backend = await SbxSandbox.create({ broker: tb.broker, perThread: true, maxOutputBytes: 200_000 });
}, SLOW);

afterAll(async () => {
  await backend?.close();
  await tb?.close();
}, SLOW);

describe("deepagents' own paths", () => {
  it(
    'keeps an evicted large result and a long message in state, readable by the agent',
    async () => {
      const model = fakeModel()
        .respondWithTools([
          {
            name: 'execute',
            id: 'call_big',
            args: { command: "head -c 90000 /dev/zero | tr '\\0' y; echo; echo END" },
          },
        ])
        .respondWithTools([
          { name: 'read_file', args: { file_path: '/large_tool_results/call_big.txt', offset: 0, limit: 5 } },
        ])
        .respond(new AIMessage('read it'));
      const agent = createDeepAgent({
        model,
        backend: sandboxWithStateRoutes(backend),
        checkpointer: new MemorySaver(),
      });
      const long = `summarise this: ${'z'.repeat(200_100)}`;
      const result = await agent.invoke(
        { messages: [new HumanMessage(long)] },
        { configurable: { thread_id: 'thr_paths' } },
      );
      const [evicted, reread] = toolTexts(result.messages);
      expect(evicted).toContain('/large_tool_results/call_big.txt');
      expect(evicted).not.toMatch(/could not be saved/);
      expect(reread).toMatch(/y{1000}/);
      const files = Object.keys((result as { files?: Record<string, unknown> }).files ?? {});
      // CompositeBackend strips the route prefix: state keys are `/call_big.txt` and `/<12 hex>`.
      expect(files).toHaveLength(2);
      expect(files).toEqual(
        expect.arrayContaining(['/call_big.txt', expect.stringMatching(/^\/[0-9a-f]{12}$/)]),
      );
      // None of it went to the shared workspace.
      const human = await BrokerSession.get(tb.broker, {
        scope: { type: 'thread', id: 'thr_paths' },
        actor: { type: 'human', id: 'usr_paths' },
      });
      try {
        expect((await human.sandbox().files.list('.')).entries).toEqual([]);
      } finally {
        await human.release();
      }
    },
    SLOW,
  );
});
