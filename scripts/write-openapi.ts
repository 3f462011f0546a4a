// `pnpm openapi:write`: regenerates docs/openapi.json and docs/openapi-agent.json from the route tables.
import { writeFile } from 'node:fs/promises';
import { openApiFiles } from './openapi-file.js';

for (const { path, text } of await openApiFiles()) {
  await writeFile(path, text);
  process.stdout.write(`wrote ${path}\n`);
}
