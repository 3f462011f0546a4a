// The checked-in OpenAPI documents, generated from the route tables: docs/openapi.json (what
// the broker serves at /v1/openapi.json) and docs/openapi-agent.json (the agent's data plane,
// docs/protocol.md#openapi-documents). `pnpm openapi:write` writes both;
// scripts/test/openapi-file.test.ts fails when one is stale.
import { fileURLToPath } from 'node:url';
import { format } from 'prettier';
import { buildAgentOpenApiDocument, buildOpenApiDocument } from '../packages/protocol/src/index.js';
import { AGENT_VERSION } from '../services/agent/src/version.js';
import { BROKER_VERSION } from '../services/broker/src/version.js';

export const OPENAPI_PATH = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));
export const AGENT_OPENAPI_PATH = fileURLToPath(new URL('../docs/openapi-agent.json', import.meta.url));

/** The document as the broker serves it (its version, servers relative to it). */
export function currentOpenApiDocument(): Record<string, unknown> {
  return buildOpenApiDocument({ version: BROKER_VERSION });
}

/** The agent's document (the agent's version). */
export function currentAgentOpenApiDocument(): Record<string, unknown> {
  return buildAgentOpenApiDocument({ version: AGENT_VERSION });
}

/** A document's file text: JSON formatted as the repository's prettier settings want it. */
export async function openApiFileText(document = currentOpenApiDocument()): Promise<string> {
  return format(JSON.stringify(document), {
    parser: 'json',
    singleQuote: true,
    printWidth: 110,
    trailingComma: 'all',
  });
}

/** Every checked-in document: its path and its current text. */
export async function openApiFiles(): Promise<{ path: string; text: string }[]> {
  return [
    { path: OPENAPI_PATH, text: await openApiFileText(currentOpenApiDocument()) },
    { path: AGENT_OPENAPI_PATH, text: await openApiFileText(currentAgentOpenApiDocument()) },
  ];
}
