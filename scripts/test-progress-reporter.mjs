// Progress for scripts/run-tests.mjs, next to jest's default reporter. Off an
// interactive terminal (CI=true, or output piped into tee) the default reporter has
// no status bar: it prints a file's result when the file ends, and jest starts the
// slowest files first (by the durations of the last run, else the largest files),
// so it stayed silent for a minute or two. This one prints a line when the run
// starts and, every 15 seconds, how far it is and which files are running. It also
// keeps the counts in SBX_TEST_PROGRESS_FILE, which the runner reads when the run
// is interrupted and jest writes no results.
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const STATUS_EVERY_MS = 15_000;
const TICK_MS = 1_000;

function seconds(ms) {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

function interactive() {
  const ci = process.env.CI;
  return Boolean(process.stdout.isTTY) && process.env.TERM !== 'dumb' && (!ci || ci === 'false');
}

export default class ProgressReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    this.workers = globalConfig.maxWorkers;
    this.progressFile = process.env.SBX_TEST_PROGRESS_FILE;
    this.running = new Map();
    this.counts = { files: 0, totalFiles: 0, passed: 0, failed: 0, skipped: 0 };
    this.started = Date.now();
    this.lastStatus = Date.now();
    this.timer = undefined;
  }

  onRunStart(results) {
    this.started = Date.now();
    this.lastStatus = this.started;
    this.counts.totalFiles = results.numTotalTestSuites;
    const files = this.counts.totalFiles;
    this.print(
      files === 1
        ? 'jest: running 1 test file'
        : `jest: running ${files} test files, ${this.workers} at a time, slowest first`,
    );
    this.save();
    // The default reporter's status bar already shows this on an interactive terminal.
    if (!interactive()) this.timer = setInterval(() => this.tick(), TICK_MS).unref();
  }

  onTestFileStart(test) {
    this.running.set(test.path, Date.now());
  }

  onTestFileResult(test, _result, aggregated) {
    this.running.delete(test.path);
    this.counts.files += 1;
    this.counts.passed = aggregated.numPassedTests;
    this.counts.failed = aggregated.numFailedTests + aggregated.numRuntimeErrorTestSuites;
    this.counts.skipped = aggregated.numPendingTests + aggregated.numTodoTests;
    this.save();
  }

  onRunComplete() {
    clearInterval(this.timer);
  }

  getLastError() {
    return undefined;
  }

  tick() {
    const now = Date.now();
    if (now - this.lastStatus < STATUS_EVERY_MS) return;
    this.lastStatus = now;
    const { files, totalFiles, passed, failed } = this.counts;
    const running = [...this.running]
      .map(([file, since]) => `${path.relative(this.rootDir, file)} (${seconds(now - since)})`)
      .join(', ');
    this.print(
      `jest: ${files}/${totalFiles} files done, ${passed} tests passed, ${failed} failed after ` +
        `${seconds(now - this.started)}${running ? `; running ${running}` : ''}`,
    );
  }

  print(line) {
    process.stderr.write(`${line}\n`);
  }

  save() {
    if (!this.progressFile) return;
    try {
      const partial = `${this.progressFile}.partial`;
      writeFileSync(partial, JSON.stringify(this.counts));
      renameSync(partial, this.progressFile);
    } catch {
      // progress is a convenience; the run goes on without it
    }
  }
}
