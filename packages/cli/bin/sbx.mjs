#!/usr/bin/env node
// Runs src/main.ts through tsx, resolved from the workspace root (a root devDependency),
// so `sbx` works from a checkout without a build step.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(new URL('../../../package.json', import.meta.url));
const tsxLoader = pathToFileURL(require.resolve('tsx')).href;
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const child = spawn(process.execPath, ['--import', tsxLoader, main, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
// The terminal's signals reach the child through the process group; forward a kill too.
const forward = (signal) => child.kill(signal);
for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, forward);
process.on('SIGINT', () => undefined);
child.on('exit', (code, signal) => {
  if (signal === null) process.exit(code ?? 1);
  // Die of the child's signal, so a caller sees it (a shell reports 128 + n and stops a
  // script on Ctrl-C). The listeners above would catch it and exit 0: remove them first.
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
  // Should the signal not end this process (a disposition it cannot override), say it anyway.
  setTimeout(() => process.exit(128 + (os.constants.signals[signal] ?? 0)), 1_000);
});
