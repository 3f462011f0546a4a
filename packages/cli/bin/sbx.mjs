#!/usr/bin/env node
// Runs src/main.ts through tsx, resolved from the workspace root (a root devDependency),
// so `sbx` works from a checkout without a build step.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(new URL('../../../package.json', import.meta.url));
const tsxLoader = pathToFileURL(require.resolve('tsx')).href;
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const child = spawn(process.execPath, ['--import', tsxLoader, main, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
// The terminal's signals reach the child through the process group; forward a kill too.
for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
process.on('SIGINT', () => undefined);
child.on('exit', (code, signal) => {
  if (signal !== null) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
});
