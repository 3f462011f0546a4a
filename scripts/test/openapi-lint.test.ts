// Both OpenAPI documents pass Redocly's `recommended` ruleset (@redocly/openapi-core, offline:
// an inline config, no redocly.yaml, no remote $refs) with zero errors. Warnings are zero too,
// except what the WebSocket convention (docs/protocol.md#openapi-documents) makes the linter
// say about the agent's document: an upgrade answers 101, not 2XX, and its frame schemas are
// referenced from `x-sbx-websocket`, which the linter does not follow.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import {
  createConfig,
  lintFromString,
  type NormalizedProblem,
  type RawUniversalConfig,
} from '@redocly/openapi-core';
import { AGENT_WS_ROUTES } from '../../packages/protocol/src/index.js';
import { AGENT_OPENAPI_PATH, OPENAPI_PATH } from '../openapi-file.js';

/** `info-license` off: the platform is not published under a license the document could name. */
const LINT_CONFIG: RawUniversalConfig = { extends: ['recommended'], rules: { 'info-license': 'off' } };

const pointerOf = (problem: NormalizedProblem): string => problem.location[0]?.pointer ?? '';
const escaped = (path: string): string => path.replaceAll('~', '~0').replaceAll('/', '~1');

/** The convention's warnings, by rule and JSON pointer. */
function expectedWarnings(): Set<string> {
  const expected = new Set<string>();
  for (const route of Object.values(AGENT_WS_ROUTES)) {
    for (const path of [route.path, ...('aliases' in route ? route.aliases : [])])
      expected.add(`operation-2xx-response #/paths/${escaped(path)}/get/responses`);
    const name = route.endpoint.charAt(0).toUpperCase() + route.endpoint.slice(1);
    for (const side of ['Client', 'Server'])
      expected.add(`no-unused-components #/components/schemas/${name}${side}Frame`);
  }
  return expected;
}

async function lint(path: string, source: string): Promise<NormalizedProblem[]> {
  const config = await createConfig(LINT_CONFIG);
  return lintFromString({ source, absoluteRef: path, config });
}

describe('the OpenAPI documents under Redocly recommended', () => {
  it.each([
    ['docs/openapi.json', OPENAPI_PATH, new Set<string>()],
    ['docs/openapi-agent.json', AGENT_OPENAPI_PATH, expectedWarnings()],
  ])('%s: zero errors, no unexpected warning', async (_name, path, allowed) => {
    const problems = await lint(path, readFileSync(path, 'utf8'));
    const said = problems.map((p) => `${p.ruleId} ${pointerOf(p)}`);
    expect(
      problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId} ${pointerOf(p)}: ${p.message}`),
    ).toEqual([]);
    expect(said.filter((line) => !allowed.has(line))).toEqual([]);
  });

  it('finds errors when there are some (the linter runs, with the recommended rules)', async () => {
    const broken = JSON.stringify({
      openapi: '3.1.0',
      info: { title: 'x', version: '1' },
      paths: { '/a/{id}': { get: { responses: { '200': { description: 'OK' } } } } },
    });
    const rules = new Set(
      (await lint('/broken.json', broken)).filter((p) => p.severity === 'error').map((p) => p.ruleId),
    );
    expect([...rules].toSorted()).toEqual(
      expect.arrayContaining(['no-empty-servers', 'operation-summary', 'path-parameters-defined']),
    );
  });
});
