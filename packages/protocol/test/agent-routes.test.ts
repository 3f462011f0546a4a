import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import {
  AGENT_ROUTES,
  AGENT_WS_ROUTES,
  buildAgentOpenApiDocument,
  ERROR_CODES,
  type AgentRouteSpec,
  type AgentWsRouteSpec,
} from '../src/index.js';

const routes: [string, AgentRouteSpec][] = Object.entries(AGENT_ROUTES);
const sockets: [string, AgentWsRouteSpec][] = Object.entries(AGENT_WS_ROUTES);

describe('agent route table', () => {
  it('names unique method + path pairs with path params matching the template', () => {
    const keys = routes.map(([, r]) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const [name, route] of routes) {
      const templated = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const schema = z.toJSONSchema(route.params, { io: 'input' }) as { properties?: object };
      expect([name, Object.keys(schema.properties ?? {})]).toEqual([name, templated]);
    }
  });

  it('lists known error codes; only POST and PUT take a body; every route authenticates', () => {
    for (const [name, route] of routes) {
      for (const code of route.errors) expect(ERROR_CODES).toContain(code);
      expect([name, route.body === undefined || ['POST', 'PUT'].includes(route.method)]).toEqual([
        name,
        true,
      ]);
      expect([name, route.errors.includes('UNAUTHENTICATED')]).toEqual([name, true]);
    }
  });

  it('gives each WebSocket endpoint its own paths, none shared with an HTTP route', () => {
    const http = new Set(routes.map(([, r]) => r.path));
    const ws = sockets.flatMap(([, s]) => [s.path, ...(s.aliases ?? [])]);
    expect(new Set(ws).size).toBe(ws.length);
    for (const path of ws) expect(http.has(path)).toBe(false);
  });

  it('converts every schema to JSON Schema (for the OpenAPI document)', () => {
    for (const [name, route] of routes) {
      for (const schema of [route.params, route.query, route.body, route.response]) {
        if (schema === undefined || typeof schema === 'string') continue;
        expect([name, typeof z.toJSONSchema(schema, { io: 'input' })]).toEqual([name, 'object']);
      }
    }
  });
});

describe('buildAgentOpenApiDocument', () => {
  const doc = buildAgentOpenApiDocument({ version: 'test' }) as {
    servers: { url: string }[];
    paths: Record<string, Record<string, Record<string, unknown>>>;
    components: { schemas: Record<string, unknown> };
  };

  it('lets signed URLs in only where the agent takes them, with exp beside sig', () => {
    for (const [name, route] of routes) {
      const op = doc.paths[route.path]?.[route.method.toLowerCase()] ?? {};
      const signed = (op['security'] as object[]).some((requirement) => 'signedUrl' in requirement);
      const params = (op['parameters'] as { name: string }[]).map((p) => p.name);
      expect([name, signed, params.includes('exp')]).toEqual([
        name,
        route.alsoAuth?.includes('signed-url') === true,
        signed,
      ]);
    }
  });

  it('documents 415 wherever a JSON body is read, and raw uploads as bytes', () => {
    for (const [name, route] of routes) {
      const op = doc.paths[route.path]?.[route.method.toLowerCase()];
      const responses = op?.['responses'] as Record<string, unknown>;
      const json = route.body !== undefined && route.body !== 'bytes';
      expect([name, '415' in responses]).toEqual([name, json]);
    }
    const upload = doc.paths['/v1/files/upload']?.['post']?.['requestBody'] as { content: object };
    expect(Object.keys(upload.content)).toEqual(['application/octet-stream']);
  });

  it('has a server for the agent itself and one for the relay', () => {
    expect(doc.servers.map((s) => s.url)).toEqual([
      '{http_base_url}',
      '{broker_url}/v1/sandboxes/{sandbox_id}/dp',
    ]);
  });

  it('carries every frame schema the WebSocket operations reference', () => {
    for (const [, socket] of sockets) {
      const op = doc.paths[socket.path]?.['get'];
      const ext = op?.['x-sbx-websocket'] as {
        client_frames: { $ref: string };
        server_frames: { $ref: string };
      };
      for (const ref of [ext.client_frames.$ref, ext.server_frames.$ref]) {
        const name = ref.replace('#/components/schemas/', '');
        expect(doc.components.schemas[name]).toMatchObject({ oneOf: expect.any(Array) });
      }
    }
  });
});
