// Runs every benchmark suite (bench/<suite>/run.ts) or the ones named on the
// command line. Each suite measures its own floor in the same run and reports
// ratios against it, in bench/results/<suite>.json. Afterwards the suites of this
// run are merged into bench/results/latest.json, with the machine they ran on and
// its load before and after each, and bench/lib/summary.ts renders that as one
// Markdown table, bench/results/latest.md.
//
//   node scripts/run-bench.mjs [suite…]   run, then write latest.json and latest.md
//   node scripts/run-bench.mjs --publish  copy the last latest.md to docs/performance.md
//                                         and its table into README.md (nothing is run)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const benchDir = path.join(root, 'bench');
const resultsDir = path.join(benchDir, 'results');
const tsx = path.join(root, 'node_modules/.bin/tsx');
const summary = path.join(benchDir, 'lib', 'summary.ts');

const args = process.argv.slice(2);
if (args.includes('--publish')) {
  const run = spawnSync(tsx, [summary, '--publish'], { cwd: root, stdio: 'inherit' });
  process.exit(run.status ?? 1);
}

const wanted = args;
const suites = readdirSync(benchDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(path.join(benchDir, entry.name, 'run.ts')))
  .map((entry) => entry.name)
  .filter((name) => wanted.length === 0 || wanted.includes(name));

if (suites.length === 0) {
  console.error(`no benchmark suite found${wanted.length > 0 ? ` named ${wanted.join(', ')}` : ''}`);
  process.exit(2);
}

/** 1, 5 and 15 minute load averages, rounded as `uptime` shows them. */
const load = () => os.loadavg().map((value) => Math.round(value * 100) / 100);

/** The tree measured: commit and whether the working tree had changes (read only). */
function treeOf() {
  const git = spawnSync('git', ['describe', '--always', '--dirty'], { cwd: root, encoding: 'utf8' });
  return git.status === 0 ? git.stdout.trim() : undefined;
}

function machine() {
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    model: cpus[0]?.model.trim() ?? 'unknown',
    memory_bytes: os.totalmem(),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
  };
}

/**
 * What a suite wrote in this run: its results file when it was written after the suite
 * started, else one failed line (a suite that crashed before reporting leaves an older
 * file, or none, which must not pass for this run's results).
 */
function resultsOf(suite, startedAt) {
  const file = path.join(resultsDir, `${suite}.json`);
  const missing = (why) => ({
    at: undefined,
    verdicts: [{ metric: 'suite: no results', value: Number.NaN, unit: '', target: why, pass: false }],
  });
  if (!existsSync(file)) return missing('it wrote no bench/results file');
  const written = JSON.parse(readFileSync(file, 'utf8'));
  if (!(new Date(written.at) >= startedAt)) return missing('its results file is from an earlier run');
  return { at: written.at, verdicts: written.verdicts };
}

/** Share of all cores busy over the next `ms` (from /proc/stat through os.cpus). */
function busyOver(ms) {
  const total = (cpus) =>
    cpus.reduce((sum, cpu) => sum + Object.values(cpu.times).reduce((a, b) => a + b, 0), 0);
  const idle = (cpus) => cpus.reduce((sum, cpu) => sum + cpu.times.idle, 0);
  const before = os.cpus();
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  const after = os.cpus();
  const elapsed = total(after) - total(before);
  return elapsed > 0 ? 1 - (idle(after) - idle(before)) / elapsed : 0;
}

/**
 * Waits, up to 3 minutes, until the machine is quiet (under a quarter busy for 5 s): the
 * sandboxes of one suite (first-command and providers start 100 each) are still ending when
 * it exits, and the next suite measured against that load (the relay's download gave 0.65×
 * of its floor after them, 1.81× alone). Returns the seconds waited.
 */
function settle() {
  const started = Date.now();
  while (Date.now() - started < 180_000 && busyOver(5000) >= 0.25);
  return Math.round((Date.now() - started) / 1000);
}

const run = { started_at: new Date().toISOString(), tree: treeOf(), machine: machine(), load_before: load() };
const records = [];
let failures = 0;
for (const suite of suites) {
  console.log(`\n== bench/${suite}`);
  const settledSeconds = settle();
  console.log(`   waited ${settledSeconds} s for the machine to settle`);
  const startedAt = new Date();
  const loadBefore = load();
  const child = spawnSync(tsx, [path.join(benchDir, suite, 'run.ts')], { cwd: root, stdio: 'inherit' });
  const seconds = (Date.now() - startedAt.getTime()) / 1000;
  if (child.status !== 0) failures += 1;
  records.push({
    suite,
    exit_code: child.status,
    seconds: Math.round(seconds),
    settled_seconds: settledSeconds,
    load_before: loadBefore,
    load_after: load(),
    ...resultsOf(suite, startedAt),
  });
}

mkdirSync(resultsDir, { recursive: true });
const latest = { ...run, finished_at: new Date().toISOString(), load_after: load(), suites: records };
// NaN (a measurement that did not complete) is not JSON: written as null.
writeFileSync(path.join(resultsDir, 'latest.json'), `${JSON.stringify(latest, null, 2)}\n`);
const rendered = spawnSync(tsx, [summary], { cwd: root, stdio: 'inherit' });
if (rendered.status !== 0) failures += 1;
process.exit(failures > 0 ? 1 : 0);
