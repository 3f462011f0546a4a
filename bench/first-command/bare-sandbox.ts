/**
 * The floor of "create sandbox → run echo": the least any sandbox on this machine must do
 * for its first command, with the product's own isolation and none of its parts — a fresh
 * workspace directory and one `bwrap` with exactly the flags of a sandbox's namespaces
 * (service-kit's `bubblewrapConfinementArgs`: its own user, pid, ipc, uts and network
 * namespaces, a read-only root, the workspace) running `echo`, whose output is checked.
 * No agent, broker, database or HTTP. The workspace is removed after the timed part, as a
 * sandbox is destroyed after its first command in the subject's runs.
 *
 * For context, a raw `spawn('echo')`: the cost of any process start here.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { bubblewrapConfinementArgs } from '@sbx/service-kit';
import type { Operation } from './patterns.js';

const BWRAP = '/usr/bin/bwrap';

/** Runs `file args`, resolves with its stdout once it exited 0 and closed its pipes. */
function output(file: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`${file} exited ${code}: ${Buffer.concat(err).toString('utf8').slice(0, 300)}`));
    });
  });
}

function expectEcho(got: string, marker: string): void {
  if (got !== `${marker}\n`) throw new Error(`echo answered ${JSON.stringify(got.slice(0, 100))}`);
}

/** `bwrap <a sandbox's namespaces> -- echo <marker>` on a new workspace under `root`. */
export function bareSandboxEcho(root: string): Operation {
  return async (index) => {
    const workspace = mkdtempSync(path.join(root, `ws-${index}-`));
    try {
      const marker = `bare-${index}`;
      const args = [...bubblewrapConfinementArgs({ workspaceRoot: workspace }), '--', '/bin/echo', marker];
      expectEcho(await output(BWRAP, args), marker);
    } finally {
      // After the answer: destroying is not part of the first command, as in the subject.
      setImmediate(() => rmSync(workspace, { recursive: true, force: true }));
    }
  };
}

/** `spawn('echo')`, context only. */
export const rawEcho: Operation = async (index) => {
  const marker = `raw-${index}`;
  expectEcho(await output('/bin/echo', [marker]), marker);
};
