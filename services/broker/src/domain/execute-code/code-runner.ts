// How the broker asks a sandbox's agent to run a snippet (`POST /v1/code`,
// docs/code-runner.md). An adapter the composition root passes in, so the service
// stays free of HTTP; the real one is `httpCodeRunner`.
import { CodeRunResponse, type ExecuteCodeLanguage } from '@sbx/protocol';
import { postJson, type JsonAnswer } from '../../adapters/agent-http/post-json.js';

export interface CodeRun {
  readonly language: ExecuteCodeLanguage;
  readonly code: string;
  readonly timeoutMs: number;
  readonly memoryLimitMb: number;
}

export type CodeRunOutcome = CodeRunResponse;

export interface CodeRunner {
  /** Throws when the agent cannot be reached or answers with anything but a result. */
  run(httpBaseUrl: string, token: string, run: CodeRun): Promise<CodeRunOutcome>;
}

/** Beyond the run's own timeout: the agent's kill grace and the answer's way back. */
const TRANSPORT_MARGIN_MS = 15_000;

export class AgentUnreachable extends Error {}

export const httpCodeRunner: CodeRunner = {
  async run(httpBaseUrl, token, run) {
    let answer: JsonAnswer;
    try {
      answer = await postJson(
        new URL(`${httpBaseUrl}/v1/code`),
        { authorization: `Bearer ${token}` },
        JSON.stringify({
          language: run.language,
          code: run.code,
          timeout_ms: run.timeoutMs,
          memory_limit_mb: run.memoryLimitMb,
        }),
        run.timeoutMs + TRANSPORT_MARGIN_MS,
      );
    } catch (err) {
      throw new AgentUnreachable('the sandbox agent did not answer', { cause: err });
    }
    if (answer.status !== 200)
      throw new AgentUnreachable(`the sandbox agent answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    const parsed = CodeRunResponse.safeParse(parseJson(answer.text));
    if (!parsed.success)
      throw new AgentUnreachable('the sandbox agent answered with something else than a code result');
    return parsed.data;
  },
};

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
