// `pnpm openapi:write`: regenerates docs/openapi.json from the route table.
import { writeFile } from 'node:fs/promises';
import { OPENAPI_PATH, openApiFileText } from './openapi-file.js';

await writeFile(OPENAPI_PATH, await openApiFileText());
process.stdout.write(`wrote ${OPENAPI_PATH}\n`);
