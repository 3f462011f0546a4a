// Generates the Prisma client offline. `prisma generate` never runs the native
// schema engine but insists that one exists and would download it from Prisma's
// host; pointing PRISMA_SCHEMA_ENGINE_BINARY at any existing file satisfies the
// check (see docs/architecture.md, "Prisma without native engines").
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const result = spawnSync(
  process.execPath,
  [path.join(root, 'node_modules/prisma/build/index.js'), 'generate', '--schema', 'prisma/schema.prisma'],
  {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
      PRISMA_HIDE_UPDATE_MESSAGE: '1',
      CHECKPOINT_DISABLE: '1',
    },
  },
);
process.exit(result.status ?? 1);
