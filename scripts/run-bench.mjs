// Runs every benchmark suite (bench/<suite>/run.ts) or the ones named on the
// command line. Each suite measures its own floor in the same run and reports
// ratios against it; results are written to bench/results/<suite>.json.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const benchDir = path.join(root, 'bench');
const wanted = process.argv.slice(2);
const suites = readdirSync(benchDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(path.join(benchDir, entry.name, 'run.ts')))
  .map((entry) => entry.name)
  .filter((name) => wanted.length === 0 || wanted.includes(name));

if (suites.length === 0) {
  console.error(`no benchmark suite found${wanted.length > 0 ? ` named ${wanted.join(', ')}` : ''}`);
  process.exit(2);
}
let failures = 0;
for (const suite of suites) {
  console.log(`\n== bench/${suite}`);
  const run = spawnSync(path.join(root, 'node_modules/.bin/tsx'), [path.join(benchDir, suite, 'run.ts')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (run.status !== 0) failures += 1;
}
process.exit(failures > 0 ? 1 : 0);
