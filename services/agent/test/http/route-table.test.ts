// The agent's route table in packages/protocol (AGENT_ROUTES, AGENT_WS_ROUTES), which
// docs/openapi-agent.json is generated from, names exactly the routes the agent serves:
// read off the Express routers and the WebSocket routes of the real features.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AGENT_ROUTES,
  AGENT_WS_ROUTES,
  AgentHealthReport,
  AgentLiveness,
  SandboxInfo,
  type AgentRouteSpec,
} from '@sbx/protocol';
import type { AgentFeature } from '../../src/agent-context.js';
import { createAgentApp } from '../../src/http/app.js';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { filesFeature } from '../../src/http/files/files-feature.js';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

interface Layer {
  readonly route?: { readonly path: string | string[]; readonly methods: Record<string, boolean> };
  readonly handle?: { readonly stack?: readonly Layer[] };
}

/** Express `:id` and `*path` as OpenAPI `{id}` and `{path}`. */
const templated = (path: string): string => path.replace(/\/[:*](\w+)/g, '/{$1}');

/** `METHOD path` of every route in a router's stack, nested routers included. */
function servedRoutes(stack: readonly Layer[]): string[] {
  return stack.flatMap((layer) => {
    if (layer.route === undefined) return servedRoutes(layer.handle?.stack ?? []);
    const { path, methods } = layer.route;
    const verbs = Object.keys(methods).filter((method) => methods[method] === true);
    return [path].flat().flatMap((p) => verbs.map((verb) => `${verb.toUpperCase()} ${templated(p)}`));
  });
}

describe('the agent route table', () => {
  let agent: TestAgent;
  let features: AgentFeature[] = [];
  beforeAll(async () => {
    agent = await startTestAgent({
      features: (ctx) => {
        features = [filesFeature(ctx), execFeature(ctx), shellsFeature(ctx)];
        return features;
      },
    });
  });
  afterAll(async () => agent.close());

  it('lists every HTTP route the agent serves, and no other', () => {
    const app = createAgentApp(agent.ctx, features, agent.ctx.now()) as unknown as {
      router: { stack: Layer[] };
    };
    // `/files` alone is `/files/{path}` with an empty tail (the workspace).
    const served = new Set(servedRoutes(app.router.stack).filter((route) => !route.endsWith(' /files')));
    const listed = Object.values(AGENT_ROUTES).map((route) => `${route.method} ${route.path}`);
    // Express answers HEAD with every GET route; the table lists HEAD where it means something.
    const heads = listed.filter((route) => route.startsWith('HEAD '));
    for (const head of heads) expect(served).toContain(head.replace(/^HEAD/, 'GET'));
    expect([...served].toSorted()).toEqual(listed.filter((route) => !heads.includes(route)).toSorted());
  });

  it('lists every WebSocket endpoint with its paths and capabilities (legacy ones are off)', () => {
    const served = features
      .flatMap((feature) => feature.wsRoutes ?? [])
      .map((route) => ({ endpoint: route.endpoint, paths: [...route.paths], anyOf: [...route.anyOf] }));
    const listed = Object.values(AGENT_WS_ROUTES).map((route) => ({
      endpoint: route.endpoint,
      paths: [route.path, ...('aliases' in route ? route.aliases : [])],
      anyOf: [...route.scopes],
    }));
    const byEndpoint = (a: { endpoint: string }, b: { endpoint: string }): number =>
      a.endpoint.localeCompare(b.endpoint);
    expect(served.toSorted(byEndpoint)).toEqual(listed.toSorted(byEndpoint));
  });

  it('names the scopes the agent checks: a token without them is refused with 403', async () => {
    const none = agent.token(['shell:ro']);
    for (const route of Object.values(AGENT_ROUTES) as AgentRouteSpec[]) {
      if (route.scopes.length === 0 || route.scopes.includes('shell:ro') || route.method === 'HEAD') continue;
      const path = route.path.replace('{path}', 'a.txt').replace('{id}', 'proc_1');
      const res = await fetch(`${agent.httpUrl}${path}?path=a.txt`, {
        method: route.method,
        headers: { authorization: `Bearer ${none}`, 'content-type': 'application/json' },
        ...(route.method === 'POST' || route.method === 'PUT' ? { body: '{}' } : {}),
      });
      const body = (await res.json()) as { error?: { code?: string } };
      expect([`${route.method} ${route.path}`, res.status, body.error?.code]).toEqual([
        `${route.method} ${route.path}`,
        403,
        'CAPABILITY_DENIED',
      ]);
    }
  });

  it('answers /healthz and /v1/info in the documented shapes, with no undocumented field', async () => {
    const get = async (path: string, token?: string): Promise<Record<string, unknown>> => {
      const headers = token === undefined ? undefined : { authorization: `Bearer ${token}` };
      return (await (await fetch(`${agent.httpUrl}${path}`, { headers })).json()) as Record<string, unknown>;
    };
    const token = agent.token(['fs:ro']);
    const cases = [
      [AgentLiveness, await get('/healthz')],
      [AgentHealthReport, await get('/healthz', token)],
      [SandboxInfo, await get('/v1/info', token)],
    ] as const;
    for (const [schema, body] of cases) {
      expect(schema.safeParse(body).error).toBeUndefined();
      expect(Object.keys(body).filter((key) => !(key in schema.shape))).toEqual([]);
    }
  });
});
