import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { ERROR_CODES, ROUTES, type RouteSpec } from '../src/index.js';

const routes: [string, RouteSpec][] = Object.entries(ROUTES);

describe('route table', () => {
  it('names unique method + path pairs with path params matching the template', () => {
    const keys = routes.map(([, r]) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const [name, route] of routes) {
      const templated = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const schema = z.toJSONSchema(route.params, { io: 'input' }) as {
        properties?: Record<string, unknown>;
      };
      expect([name, Object.keys(schema.properties ?? {})]).toEqual([name, templated]);
    }
  });

  it('lists only known error codes, and DELETE/GET routes take no body', () => {
    for (const [, route] of routes) {
      for (const code of route.errors) expect(ERROR_CODES).toContain(code);
      expect([
        route.path,
        ['POST', 'PUT', 'PATCH'].includes(route.method) || route.body === undefined,
      ]).toEqual([route.path, true]);
    }
  });

  it('converts every wire schema to JSON Schema (for the OpenAPI document)', () => {
    for (const [name, route] of routes) {
      for (const schema of [route.params, route.body, route.response]) {
        if (schema === undefined) continue;
        expect([name, typeof z.toJSONSchema(schema, { io: 'input' })]).toEqual([name, 'object']);
      }
    }
  });

  it('documents the negotiate body with both shapes in one object', () => {
    const schema = z.toJSONSchema(ROUTES.negotiateSession.body, { io: 'input' });
    expect(Object.keys(schema.properties ?? {}).toSorted()).toEqual(
      [
        'actor',
        'mode',
        'provider_preference',
        'requested_capabilities',
        'sandbox_hint',
        'scope',
        'thread_id',
      ].toSorted(),
    );
    expect(schema.required).toEqual(['mode']);
  });
});
