// Runs jest (ESM mode, as PGlite and the generated Prisma client need) and
// prints the plain summary line CI reads: `tests: N passed, N failed`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const resultsDir = path.join(root, '.test-results');
const resultsFile = path.join(resultsDir, 'jest.json');
mkdirSync(resultsDir, { recursive: true });
rmSync(resultsFile, { force: true });

const nodeOptions = [
  process.env.NODE_OPTIONS,
  '--experimental-vm-modules',
  '--no-warnings=ExperimentalWarning',
]
  .filter(Boolean)
  .join(' ');
const jest = spawnSync(
  process.execPath,
  [
    path.join(root, 'node_modules/jest/bin/jest.js'),
    '--json',
    `--outputFile=${resultsFile}`,
    ...process.argv.slice(2),
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_OPTIONS: nodeOptions } },
);

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const results = JSON.parse(readFileSync(resultsFile, 'utf8'));
  passed = results.numPassedTests;
  skipped = results.numPendingTests + results.numTodoTests;
  // A suite that fails to load has no failed tests of its own; count it so it cannot pass unseen.
  failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
} catch {
  failed = 1;
  console.error('run-tests: jest wrote no results (see its output above)');
}
if (jest.status !== 0 && failed === 0) failed = 1;
console.log(`tests: ${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : (jest.status ?? 1));
