// The naming convention of what a test run creates outside its processes: Postgres
// databases and Redis key prefixes are both named
//
//   sbx_test_<created>_<run>_<random>
//
// <created> is the creation time in Unix seconds, base 36; <run> is the run's id
// (SBX_TEST_RUN, set by scripts/run-tests.mjs; `p<pid>` for a bare jest process);
// <random> is hex. A Redis prefix may carry a suffix (`-0`) before the `:` of its keys.
// The runner drops its own run's names on exit or interrupt, and at start any name
// whose <created> is older than a day (a crashed run's); see scripts/test-cleanup.mjs.
import { randomBytes } from 'node:crypto';

export const TEST_NAME_PREFIX = 'sbx_test_';
/** Redis prefixes of tests written before the convention: swept by idle time only. */
export const LEGACY_REDIS_PREFIX = 'sbxtest-';
/** The environment variable that carries the run's id into jest and its workers. */
export const RUN_ENV = 'SBX_TEST_RUN';
/** Resources older than this are a crashed run's; younger ones may be a concurrent run's. */
export const STALE_AFTER_MS = 24 * 3600 * 1000;

const RUN_PATTERN = /^[0-9a-z]{1,16}$/;
const NAME_PATTERN = /^sbx_test_([0-9a-z]{1,10})_([0-9a-z]{1,16})_([0-9a-z]{1,16})(?![0-9a-z_])/;

/** Whether run is a run id: 1-16 lowercase letters and digits. */
export function isRunId(run) {
  return typeof run === 'string' && RUN_PATTERN.test(run);
}

/** A fresh run id: 8 hex digits. */
export function newRunId() {
  return randomBytes(4).toString('hex');
}

/** The id of the run this process belongs to. */
export function currentRunId(env = process.env) {
  const run = env[RUN_ENV];
  return isRunId(run) ? run : `p${process.pid}`;
}

/** A new database name or Redis key prefix of `run`, stamped `now`. */
export function testResourceName(run = currentRunId(), now = Date.now()) {
  if (!isRunId(run)) throw new Error(`invalid test run id ${JSON.stringify(run)}`);
  const created = Math.floor(now / 1000).toString(36);
  return `${TEST_NAME_PREFIX}${created}_${run}_${randomBytes(4).toString('hex')}`;
}

/**
 * Reads a database name, key prefix or key (`<prefix>:…`) of the convention:
 * `{ createdMs, run }`, or undefined when it does not follow it.
 */
export function parseTestResourceName(name) {
  const match = NAME_PATTERN.exec(name);
  if (match === null) return undefined;
  const createdMs = Number.parseInt(match[1], 36) * 1000;
  if (!Number.isSafeInteger(createdMs)) return undefined;
  return { createdMs, run: match[2] };
}
