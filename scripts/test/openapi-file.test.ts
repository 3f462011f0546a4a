// docs/openapi.json is the document the broker serves: regenerate it with
// `pnpm openapi:write` whenever a route or one of its schemas changes.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { ADMIN_ROUTES, ROUTES } from '../../packages/protocol/src/index.js';
import { currentOpenApiDocument, OPENAPI_PATH } from '../openapi-file.js';

const STALE =
  'docs/openapi.json is stale: run `pnpm openapi:write` (tsx scripts/write-openapi.ts) and commit it';

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

describe('docs/openapi.json', () => {
  const file = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as {
    paths: Record<string, Record<string, unknown>>;
  };

  it('is the document the broker serves', () => {
    const current = JSON.parse(JSON.stringify(currentOpenApiDocument())) as unknown;
    const at = firstDifference(file, current, '$');
    expect(at === undefined ? 'current' : `${STALE} (first difference at ${at})`).toBe('current');
  });

  it('covers the session, thread, OAuth and admin routes', () => {
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
