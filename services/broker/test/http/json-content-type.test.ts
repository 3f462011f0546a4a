// A JSON body sent without `Content-Type: application/json` (what `curl -d` does) is 415 saying
// so (issue 27), not the schema's complaint about the fields no parser read (`mode: Invalid
// option …`). A body-less POST still counts as `{}`, and the form routes still take forms.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { buildOpenApiDocument } from '@sbx/protocol';
import { bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.available)!; // Postgres when the machine has it

interface Answer {
  readonly status: number;
  readonly error: { readonly code: string; readonly message: string } | undefined;
}

describe(`broker: JSON bodies without their Content-Type [${backend.name}]`, () => {
  const broker = useBroker(backend);
  let key: string;
  beforeAll(async () => {
    key = await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox'], principalType: 'user' });
  });

  async function post(path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    const res = await fetch(`${broker.url}${path}`, {
      method: 'POST',
      headers: { ...bearer(key), ...headers },
      ...(body === undefined ? {} : { body: new TextEncoder().encode(body) }),
    });
    const parsed = (await res.json().catch(() => ({}))) as { error?: Answer['error'] };
    return { status: res.status, error: parsed.error };
  }

  const ensure = JSON.stringify({ thread_id: 'thr_curl', mode: 'ensure' });

  it.each([
    ['as a form (curl -d)', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['as text', { 'content-type': 'text/plain; charset=utf-8' }],
    ['without a Content-Type', {}],
  ])('POST /v1/sandbox/sessions with a JSON body %s is 415 naming the header', async (_name, type) => {
    const answer = await post('/v1/sandbox/sessions', type, ensure);
    expect(answer.status).toBe(415);
    expect(answer.error?.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(answer.error?.message).toContain('send Content-Type: application/json');
    expect(answer.error?.message).not.toContain('mode');
  });

  it('the same body with the header is served, and a body-less POST still counts as {}', async () => {
    const created = await post('/v1/sandbox/sessions', { 'content-type': 'application/json' }, ensure);
    expect(created.status).toBe(200);
    const noBody = await post('/threads/thr_curl/sandbox/heartbeat', {});
    expect(noBody.error?.code).not.toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(noBody.status).toBe(200);
  });

  it('the OpenAPI document lists 415 on JSON-body routes and a form body on the OAuth routes', () => {
    const paths = buildOpenApiDocument({ version: 'test' })['paths'] as Record<
      string,
      Record<string, { responses: Record<string, unknown>; requestBody?: { content: object } }>
    >;
    expect(paths['/v1/sandbox/sessions']?.['post']?.responses).toHaveProperty('415');
    const token = paths['/oauth/token']?.['post'];
    expect(token?.responses).not.toHaveProperty('415');
    expect(Object.keys(token?.requestBody?.content ?? {})).toEqual(['application/x-www-form-urlencoded']);
  });
});
