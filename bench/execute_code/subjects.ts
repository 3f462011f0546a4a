/**
 * The calls the overhead measurement alternates, on one new thread of the bench's agent
 * principal: the tool path, its floor, the context floor and two stages of the tool path
 * done by the client itself (a negotiation alone; a negotiation and then the agent's
 * `/v1/code` with the token it minted, which is what the broker does minus quota, record
 * and relaying). Each op answers the run time the agent reported, when there is one.
 */
import { randomBytes } from 'node:crypto';
import { keepAliveAgent, request } from '../lib/http-client.js';
import type { ExecuteCodeWorld } from './bench-world.js';
import type { Subject } from './rounds.js';
import { executeCode, negotiateThread, runCode, runExec, type Language } from './tool-client.js';

const SNIPPETS: Record<Language, { readonly code: string; readonly cmd: string }> = {
  python: { code: 'print(1)', cmd: "python3 -c 'print(1)'" },
  bash: { code: 'echo 1', cmd: 'echo 1' },
};

export type SubjectName = 'tool' | 'code' | 'exec' | 'negotiate' | 'negotiate+code';

export interface ThreadSubjects {
  readonly subjects: ReadonlyArray<Subject & { readonly name: SubjectName }>;
  /** Releases the thread's sandbox (the last release ends it). */
  readonly release: () => Promise<void>;
}

function expectOne(stdout: string, what: string): void {
  if (stdout !== '1\n')
    throw new Error(`${what} printed ${JSON.stringify(stdout.slice(0, 200))}, not "1\\n"`);
}

export async function threadSubjects(world: ExecuteCodeWorld, language: Language): Promise<ThreadSubjects> {
  const { broker, agentKey, memoryLimitMb } = world;
  const snippet = SNIPPETS[language];
  const threadId = `thr_bench_code_${language}_${randomBytes(4).toString('hex')}`;
  const toolBody = { thread_id: threadId, language, code: snippet.code };
  const codeBody = { language, code: snippet.code, memory_limit_mb: memoryLimitMb };
  // negotiate+code's second connection, to the agent (rounds.ts gives each subject one).
  const agentSide = keepAliveAgent();
  const release = async (): Promise<void> => {
    agentSide.destroy();
    await request(`${broker.url}/threads/${threadId}/sandbox`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${agentKey}` },
    });
  };
  // The first call ensures the thread's sandbox and proves its agent's redactor (readiness).
  const first = await executeCode(broker.url, agentKey, toolBody);
  const sandbox = await negotiateThread(broker.url, agentKey, threadId);
  if (sandbox.sandbox_id !== first.sandbox_id) {
    await release();
    throw new Error(
      `the thread route gave sandbox ${sandbox.sandbox_id}, execute_code ran in ${first.sandbox_id}`,
    );
  }
  const agentUrl = sandbox.endpoints.http;
  return {
    release,
    subjects: [
      {
        name: 'tool',
        op: async (agent) => {
          const result = await executeCode(broker.url, agentKey, toolBody, agent);
          expectOne(result.stdout, 'execute_code');
          return result.duration_ms;
        },
      },
      {
        name: 'code',
        op: async (agent) => {
          const result = await runCode(agentUrl, sandbox.token, codeBody, agent);
          expectOne(result.stdout, '/v1/code');
          return result.duration_ms;
        },
      },
      {
        name: 'exec',
        op: async (agent) => {
          const result = await runExec(agentUrl, sandbox.token, snippet.cmd, agent);
          expectOne(result.stdout, '/v1/exec');
          return result.duration_ms;
        },
      },
      {
        name: 'negotiate',
        op: async (agent) => void (await negotiateThread(broker.url, agentKey, threadId, agent)),
      },
      {
        // Two kept-alive connections, like the broker's path: to the broker and to the agent.
        name: 'negotiate+code',
        op: async (agent) => {
          const fresh = await negotiateThread(broker.url, agentKey, threadId, agent);
          const result = await runCode(fresh.endpoints.http, fresh.token, codeBody, agentSide);
          expectOne(result.stdout, 'negotiate + /v1/code');
          return result.duration_ms;
        },
      },
    ],
  };
}
