// `node scripts/run-reliability.mjs [jest args]`: the reliability suites' long forms
// (reliability/README.md), through the same runner as the tests, with SBX_RELIABILITY=long.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
// jest ORs its path patterns: `reliability` beside a suite's own pattern would run them all.
const patterns = args.some((arg) => !arg.startsWith('-')) ? [] : ['reliability'];
const run = spawnSync(
  process.execPath,
  [path.join(root, 'scripts/run-tests.mjs'), '--testTimeout=3600000', ...patterns, ...args],
  { cwd: root, stdio: 'inherit', env: { ...process.env, SBX_RELIABILITY: 'long' } },
);
process.exit(run.status ?? 1);
