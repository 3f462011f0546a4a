// One backend object, many threads: each call uses the sandbox of its LangGraph run's
// thread (ensured once, as actor `agent`), or the session the run config carries.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Annotation, StateGraph } from '@langchain/langgraph';
import { BrokerClient, type NegotiateOptions, type NegotiateTarget } from '@sbx/client';
import type { SessionResponse } from '@sbx/protocol';
import { SbxSandbox } from '../src/index.js';
import { DEAD_BROKER, startTestBroker, type TestBroker } from './support.js';

const SLOW = 60_000;
let tb: TestBroker;

/** Counts negotiations, so a test can tell one ensure per thread from one per call. */
class CountingBroker extends BrokerClient {
  readonly ensured: string[] = [];
  override ensure(target: NegotiateTarget, options?: NegotiateOptions): Promise<SessionResponse> {
    if ('scope' in target) this.ensured.push(`${target.scope.id}:${target.actor?.type ?? ''}`);
    return super.ensure(target, options);
  }
}

/** A one-node graph whose node runs `command` through the backend, as a deep agent's tool would. */
function graphOf(backend: SbxSandbox) {
  const State = Annotation.Root({ command: Annotation<string>(), output: Annotation<string>() });
  return new StateGraph(State)
    .addNode('run', async (s) => ({ output: (await backend.execute(s.command)).output }))
    .addEdge('__start__', 'run')
    .compile();
}

beforeAll(async () => {
  tb = await startTestBroker();
}, SLOW);

afterAll(async () => {
  await tb?.close();
}, SLOW);

describe('per-thread backend', () => {
  it(
    'gives each run the sandbox of its thread_id, ensuring each thread once',
    async () => {
      const broker = new CountingBroker({ baseUrl: tb.url, apiKey: tb.apiKey });
      const backend = await SbxSandbox.create({ broker, perThread: true });
      try {
        const graph = graphOf(backend);
        const run = async (thread: string, command: string): Promise<string> =>
          (await graph.invoke({ command }, { configurable: { thread_id: thread } })).output;
        await Promise.all([run('thr_a', 'echo A > mine.txt'), run('thr_b', 'echo B > mine.txt')]);
        await Promise.all([run('thr_a', 'true'), run('thr_a', 'true')]);
        expect(await run('thr_a', 'cat mine.txt')).toBe('A\n');
        expect(await run('thr_b', 'cat mine.txt')).toBe('B\n');
        expect(broker.ensured.toSorted()).toEqual(['thr_a:agent', 'thr_b:agent']);
        // Outside a run, with no default thread, there is nothing to choose: a misuse, thrown.
        await expect(backend.execute('true')).rejects.toMatchObject({ code: 'NO_THREAD' });
      } finally {
        await backend.close();
      }
    },
    SLOW,
  );

  it(
    'uses a pre-negotiated session from configurable.sandbox without calling the broker',
    async () => {
      const session = await tb.broker.ensure({ thread_id: 'thr_pre' });
      const backend = await SbxSandbox.create({ broker: DEAD_BROKER, perThread: true });
      try {
        const graph = graphOf(backend);
        const mvp = {
          session_id: session.session_id,
          thread_id: 'thr_pre',
          sandbox: session.sandbox,
          token: session.token,
          expires_at: session.expires_at,
        };
        const out = await graph.invoke(
          { command: 'echo pre > p.txt; cat p.txt' },
          { configurable: { thread_id: 'thr_pre', sandbox: mvp } },
        );
        expect(out.output).toBe('pre\n');
        expect(backend.id.length).toBeGreaterThan(0);
      } finally {
        await backend.close();
        await tb.broker.release(session.session_id);
      }
    },
    SLOW,
  );

  it(
    'turns an unreachable broker into values for execute and the file methods',
    async () => {
      const backend = await SbxSandbox.create({ broker: DEAD_BROKER, perThread: true, threadId: 'thr_x' });
      try {
        const result = await backend.execute('true');
        expect(result.exitCode).toBe(1);
        expect(result.output).toMatch(/no sandbox for thread thr_x/);
        expect((await backend.ls('/workspace')).error).toMatch(/no sandbox for thread thr_x/);
        expect((await backend.read('/workspace/a.txt')).error).toMatch(/no sandbox/);
      } finally {
        await backend.close();
      }
    },
    SLOW,
  );
});
