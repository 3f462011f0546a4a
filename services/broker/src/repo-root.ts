import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The workspace the broker runs from: the nearest directory above this module holding
 * `pnpm-workspace.yaml`. Found, not counted in `../`: the same code runs as TypeScript from
 * `src/…` (tests, tsx) and bundled into `services/broker/dist/main.mjs` (`pnpm start`, the
 * image), where a relative URL would point elsewhere. It holds `prisma/` (migrations) and the
 * agent's sources the local provider bundles.
 */
export const REPO_ROOT = workspaceAbove(path.dirname(fileURLToPath(import.meta.url)));

function workspaceAbove(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'pnpm-workspace.yaml'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no pnpm-workspace.yaml above ${start}`);
  }
}
