import { CodeRunResponse } from '@sbx/protocol';
import { expect } from '@jest/globals';
import type { TestAgent } from '../support/agent-harness.js';
import { call, type JsonResponse } from '../exec/exec-test-kit.js';

/** `POST /v1/code` with a `process` token. */
export async function postCode(agent: TestAgent, body: unknown, token?: string): Promise<JsonResponse> {
  return call(agent, token ?? agent.token(['process']), 'POST', '/v1/code', body);
}

/** `POST /v1/code` that must answer 200; its parsed answer. */
export async function runCode(agent: TestAgent, body: unknown): Promise<CodeRunResponse> {
  const response = await postCode(agent, body);
  expect([response.status, response.body['error']]).toEqual([200, undefined]);
  return CodeRunResponse.parse(response.body);
}
