// docs/openapi.json (the broker's) and docs/openapi-agent.json (the agent's data plane) are
// generated: regenerate them with `pnpm openapi:write` whenever a route or one of its
// schemas changes. scripts/test/openapi-lint.test.ts lints both.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { ADMIN_ROUTES, AGENT_ROUTES, AGENT_WS_ROUTES, ROUTES } from '../../packages/protocol/src/index.js';
import {
  AGENT_OPENAPI_PATH,
  currentAgentOpenApiDocument,
  currentOpenApiDocument,
  OPENAPI_PATH,
  openApiFiles,
} from '../openapi-file.js';

const stale = (file: string): string =>
  `${file} is stale: run \`pnpm openapi:write\` (tsx scripts/write-openapi.ts) and commit it`;

/** The JSON path where two parsed documents first differ, or undefined when they are equal. */
function firstDifference(a: unknown, b: unknown, at: string): string | undefined {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null)
    return Object.is(a, b) ? undefined : at;
  if (Array.isArray(a) !== Array.isArray(b)) return at;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(left), ...Object.keys(right)])) {
    const found = firstDifference(left[key], right[key], `${at}.${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

type Document = { paths: Record<string, Record<string, Record<string, unknown>>>; servers?: unknown[] };

const read = (path: string): Document => JSON.parse(readFileSync(path, 'utf8')) as Document;

describe.each([
  ['docs/openapi.json', OPENAPI_PATH, currentOpenApiDocument],
  ['docs/openapi-agent.json', AGENT_OPENAPI_PATH, currentAgentOpenApiDocument],
])('%s', (name, path, current) => {
  it('is the document the generator writes', () => {
    const at = firstDifference(read(path), JSON.parse(JSON.stringify(current())) as unknown, '$');
    expect(at === undefined ? 'current' : `${stale(name)} (first difference at ${at})`).toBe('current');
  });

  it('has servers', () => {
    expect(read(path).servers?.length).toBeGreaterThan(0);
  });
});

describe('the checked-in files', () => {
  it('are byte for byte what `pnpm openapi:write` writes', async () => {
    for (const file of await openApiFiles())
      expect([file.path, readFileSync(file.path, 'utf8') === file.text]).toEqual([file.path, true]);
  });
});

describe('docs/openapi.json', () => {
  it('covers the session, thread, OAuth and admin routes', () => {
    const file = read(OPENAPI_PATH);
    expect(Object.keys(ADMIN_ROUTES).length).toBeGreaterThan(0);
    for (const route of Object.values(ROUTES))
      expect([route.path, file.paths[route.path]?.[route.method.toLowerCase()] !== undefined]).toEqual([
        route.path,
        true,
      ]);
    expect(file.paths['/oauth/token']?.['post']).toBeDefined();
    expect(Object.keys(file.paths).filter((p) => p.startsWith('/admin/')).length).toBeGreaterThan(5);
  });
});

describe('docs/openapi-agent.json', () => {
  const file = read(AGENT_OPENAPI_PATH);

  it('covers every HTTP route of the agent, with its capability scopes as security', () => {
    for (const [name, route] of Object.entries(AGENT_ROUTES)) {
      const op = file.paths[route.path]?.[route.method.toLowerCase()];
      expect([name, op?.['operationId']]).toEqual([name, name]);
      const security = op?.['security'] as Record<string, string[]>[];
      const scopes = security.flatMap((requirement) => requirement['capability'] ?? []);
      expect([name, scopes]).toEqual([name, [...route.scopes]]);
    }
  });

  it('describes every WebSocket endpoint as a 101 upgrade naming its frame schemas', () => {
    for (const route of Object.values(AGENT_WS_ROUTES)) {
      for (const path of [route.path, ...('aliases' in route ? route.aliases : [])]) {
        const op = file.paths[path]?.['get'];
        expect([path, Object.keys((op?.['responses'] as object | undefined) ?? {})]).toEqual([
          path,
          ['101', '403'],
        ]);
        expect(op?.['x-sbx-websocket']).toMatchObject({
          endpoint: route.endpoint,
          capabilities: [...route.scopes],
          client_frames: { $ref: expect.stringMatching(/^#\/components\/schemas\/\w+ClientFrame$/) },
          server_frames: { $ref: expect.stringMatching(/^#\/components\/schemas\/\w+ServerFrame$/) },
        });
      }
    }
  });
});
