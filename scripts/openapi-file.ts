// The checked-in OpenAPI document (docs/openapi.json): what the broker serves at
// /v1/openapi.json, generated from the route table. `pnpm openapi:write` writes
// it; scripts/test/openapi-file.test.ts fails when it is stale.
import { fileURLToPath } from 'node:url';
import { format } from 'prettier';
import { buildOpenApiDocument } from '../packages/protocol/src/index.js';
import { BROKER_VERSION } from '../services/broker/src/version.js';

export const OPENAPI_PATH = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));

/** The document as the broker serves it (its version, no server URL). */
export function currentOpenApiDocument(): Record<string, unknown> {
  return buildOpenApiDocument({ version: BROKER_VERSION });
}

/** The file's text: JSON formatted as the repository's prettier settings want it. */
export async function openApiFileText(): Promise<string> {
  return format(JSON.stringify(currentOpenApiDocument()), {
    parser: 'json',
    singleQuote: true,
    printWidth: 110,
    trailingComma: 'all',
  });
}
