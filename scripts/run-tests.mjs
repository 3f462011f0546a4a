// Runs jest (ESM mode, as PGlite and the generated Prisma client need) and prints the
// plain summary line CI reads, always last: `tests: N passed, N failed`.
//  - Progress from the start: a line before anything else, then jest's default reporter
//    plus scripts/test-progress-reporter.mjs (a start line and a status every 15 s).
//  - The run has an id (SBX_TEST_RUN) that names every Postgres database and Redis key
//    prefix its tests create (scripts/test-resource-names.mjs). At start, names stamped
//    more than a day ago (a crashed run's) are dropped; a concurrent run's are younger.
//  - SIGINT, SIGTERM or SIGHUP go to jest's process group (jest runs in its own, so its
//    workers and the processes tests started get them too); once jest has exited, the
//    rest of the group is killed, the run's databases and keys are dropped, and the
//    runner exits with 128 + the signal's number. A second signal kills jest at once.
//  - After a normal run the same drop removes what tests left behind.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropRunResources, sweepStaleTestResources } from './test-cleanup.mjs';
import { newRunId, RUN_ENV } from './test-resource-names.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const resultsDir = path.join(root, '.test-results');
const resultsFile = path.join(resultsDir, 'jest.json');
const run = newRunId();
const progressFile = path.join(resultsDir, `progress-${run}.json`);
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** How long jest gets to exit after a forwarded signal before it is killed. */
const STOP_GRACE_MS = 10_000;

const say = (line) => console.log(`run-tests: ${line}`);
const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;

let interrupted; // the first signal received
let jest; // the jest child process, once started
let escalation;

function signalJest(signal) {
  if (jest?.pid === undefined) return;
  try {
    process.kill(-jest.pid, signal); // the whole process group: jest, its workers, their children
  } catch {
    // the group is gone already
  }
}

function onSignal(signal) {
  if (interrupted === undefined) {
    interrupted = signal;
    say(`${signal}: stopping jest, then dropping the databases and Redis keys of run ${run}`);
    signalJest(signal);
    escalation = setTimeout(() => signalJest('SIGKILL'), STOP_GRACE_MS);
  } else {
    say(`${signal} again: killing jest`);
    signalJest('SIGKILL');
  }
}
for (const signal of SIGNALS) process.on(signal, onSignal);
// After a SIGHUP the terminal may be gone; cleanup must not die writing to it.
process.stdout.on('error', () => {});

function report(what, { databases, redisKeys, errors }) {
  if (databases.length > 0 || redisKeys > 0) {
    say(`dropped ${plural(databases.length, 'database')} and ${plural(redisKeys, 'Redis key')} ${what}`);
  }
  for (const error of errors) say(`could not drop the test databases and Redis keys ${what}: ${error}`);
}

async function runJest() {
  const nodeOptions = [
    process.env.NODE_OPTIONS,
    '--experimental-vm-modules',
    '--no-warnings=ExperimentalWarning',
  ]
    .filter(Boolean)
    .join(' ');
  jest = spawn(
    process.execPath,
    [
      path.join(root, 'node_modules/jest/bin/jest.js'),
      // --reporters takes a list: a flag must follow it, or it swallows the test paths.
      '--reporters=default',
      `--reporters=${path.join(root, 'scripts/test-progress-reporter.mjs')}`,
      '--json',
      `--outputFile=${resultsFile}`,
      ...process.argv.slice(2),
    ],
    {
      cwd: root,
      stdio: 'inherit',
      detached: true, // its own process group, signalled as one
      env: {
        ...process.env,
        NODE_OPTIONS: nodeOptions,
        [RUN_ENV]: run,
        SBX_TEST_PROGRESS_FILE: progressFile,
      },
    },
  );
  try {
    const [code] = await once(jest, 'exit');
    return code;
  } catch (err) {
    say(`could not start jest: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  } finally {
    if (interrupted !== undefined) signalJest('SIGKILL'); // workers or test processes still there
    clearTimeout(escalation);
  }
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

mkdirSync(resultsDir, { recursive: true });
rmSync(resultsFile, { force: true });
say(`run ${run}: dropping test databases and Redis keys older than a day, then starting jest`);
report('left by runs older than a day', await sweepStaleTestResources());

const jestCode = interrupted === undefined ? await runJest() : null;
report(`of run ${run}`, await dropRunResources(run));

let passed = 0;
let failed = 0;
let skipped = 0;
const results = readJson(resultsFile);
const progress = readJson(progressFile);
if (results !== undefined) {
  passed = results.numPassedTests;
  skipped = results.numPendingTests + results.numTodoTests;
  // A suite that fails to load has no failed tests of its own; count it so it cannot pass unseen.
  failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
} else {
  if (progress !== undefined) ({ passed, failed, skipped } = progress);
  if (interrupted === undefined) {
    say('jest wrote no results (see its output above)');
    failed = Math.max(failed, 1);
  }
}
if (interrupted !== undefined) {
  say(
    `interrupted by ${interrupted} after ${progress?.files ?? 0} of ${progress?.totalFiles ?? '?'} test files`,
  );
  failed = Math.max(failed, 1);
}
rmSync(progressFile, { force: true });
if (jestCode !== 0 && failed === 0) failed = 1;
console.log(`tests: ${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(
  interrupted !== undefined ? 128 + constants.signals[interrupted] : failed > 0 ? 1 : (jestCode ?? 1),
);
