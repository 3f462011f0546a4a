#!/usr/bin/env node
// The workspace's `sbx`: runs the CLI's bundle (scripts/build-cli.mjs), built JavaScript in
// this very process, as the published package's dist/bin.js does. The bundle lives in
// packages/cli/node_modules/.cache/sbx-cli and is built on the first run, and again whenever
// a file it was built from changed since (its stamp lists them with size and mtime), so an
// edit to src/ shows at the next `sbx` with no build step. Checking the stamp costs a stat
// per source file; a rebuild well under a second, with its messages on stderr only (stdout
// may be an MCP host's JSON-RPC channel).
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BUNDLE_DIR = fileURLToPath(new URL('../node_modules/.cache/sbx-cli/', import.meta.url));

function isFresh() {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(`${BUNDLE_DIR}stamp.json`, 'utf8'));
  } catch {
    return false;
  }
  if (statSync(`${BUNDLE_DIR}bin.js`, { throwIfNoEntry: false }) === undefined) return false;
  for (const [file, was] of Object.entries(stamp.inputs ?? {})) {
    const entry = statSync(REPO_ROOT + file, { throwIfNoEntry: false });
    if ((entry === undefined ? 'missing' : `${entry.size}:${entry.mtimeMs}`) !== was) return false;
  }
  return true;
}

if (!isFresh()) {
  try {
    const { buildCheckoutCli } = await import('../../../scripts/build-cli.mjs');
    await buildCheckoutCli(BUNDLE_DIR);
  } catch (err) {
    process.stderr.write(`sbx: cannot build the CLI from packages/cli/src: ${err?.message ?? String(err)}\n`);
    process.exit(1);
  }
}
await import(pathToFileURL(`${BUNDLE_DIR}bin.js`).href);
