// Requests that reach the agent almost right (issue 27): the answer names what is wrong with
// them, not a symptom further down (a schema missing its fields, a token missing its dots).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ExecResponse } from '@sbx/protocol';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

const API_KEY = 'sbk_0123456789ab_Q2FwYWJpbGl0eS10b2tlbnMtYXJlLW5vdC1hcGkta2V5cw';

describe('agent: requests that are almost right', () => {
  let agent: TestAgent;
  let token: string;
  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [execFeature(ctx)] });
    token = agent.token(['process']);
  });
  afterAll(async () => agent.close());

  const exec = (headers: Record<string, string>, body: string | Uint8Array): Promise<Response> =>
    fetch(`${agent.httpUrl}/v1/exec`, { method: 'POST', headers, body });
  const errorOf = async (res: Response) =>
    ((await res.json()) as { error: { code: string; message: string } }).error;
  const command = JSON.stringify({ argv: ['echo', 'hi'] });

  it.each([
    ['as a form (curl -d)', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['as text', { 'content-type': 'text/plain' }],
    ['without a Content-Type', {}],
  ])(
    'answers a JSON body sent %s with 415 saying to send Content-Type: application/json',
    async (_name, type) => {
      const body = new TextEncoder().encode(command); // bytes: fetch adds no Content-Type of its own
      const res = await exec({ authorization: `Bearer ${token}`, ...type }, body);
      expect(res.status).toBe(415);
      const error = await errorOf(res);
      expect(error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      expect(error.message).toContain('send Content-Type: application/json');
      expect(error.message).not.toMatch(/expected object|received undefined/);
      // The same body with the header runs.
      const ok = await exec(
        { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        command,
      );
      expect(ExecResponse.parse(await ok.json())).toMatchObject({ exit_code: 0, stdout: 'hi\n' });
    },
  );

  it('answers an API key with 401 saying it is one and where the capability token comes from, never logging it', async () => {
    const res = await exec(
      { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      command,
    );
    expect(res.status).toBe(401);
    const error = await errorOf(res);
    expect(error).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(error.message).toBe(
      'this is an API key (sbk_…); the agent takes the capability token from POST /v1/sandbox/sessions',
    );
    expect(error.message).not.toContain('three dot-separated segments');
    expect(JSON.stringify(error)).not.toContain(API_KEY.slice(4));
    expect(agent.logs.join('')).not.toContain(API_KEY.slice(4));
  });
});
