import type { ChildProcess } from 'node:child_process';
import { chownSync, realpathSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import { prepareAgentBundle } from '../../services/broker/src/providers/agent-bundle.js';
import { makeTempDir, removeTempDir, spawnTracked, stopTracked } from '../lib/resources.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

const SANDBOX_ID = 'sb_bench';
const ISSUER = 'sbx-broker';
const START_TIMEOUT_MS = 30_000;

/** The agent as operators run it: its own process, configured by the environment only. */
export interface AgentProcess {
  readonly pid: number;
  readonly httpUrl: string;
  readonly wsUrl: string;
  readonly workspace: string;
  /** A token for this sandbox granting files, exec and shells. */
  readonly token: string;
  stop(): Promise<void>;
}

/** Resolves with the URL of the `agent listening` log line; keeps reading stdout so the pipe never fills. */
function listeningUrl(child: ChildProcess): Promise<string> {
  const lines = createInterface({ input: child.stdout! });
  const seen: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`agent did not start:\n${seen.join('\n')}`)),
      START_TIMEOUT_MS,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`agent exited (${code}) before listening:\n${seen.join('\n')}`));
    });
    child.stderr!.on('data', (chunk: Buffer) => seen.push(chunk.toString('utf8')));
    lines.on('line', (line) => {
      if (seen.length < 50) seen.push(line);
      if (!line.includes('"agent listening"')) return;
      const record = JSON.parse(line) as { url?: string };
      if (record.url === undefined) return;
      clearTimeout(timer);
      resolve(record.url);
    });
  });
}

/**
 * How the agent runs in production: the esbuild bundle of services/agent/src/main.ts under
 * plain node, as the local provider starts it (its RSS, and with it the cost of every fork,
 * is well below the tsx loader's). `BENCH_AGENT=tsx` measures the source under node's tsx
 * loader instead (never the tsx CLI, which runs the program in a child process).
 * `BENCH_AGENT_BUNDLE=<dir>` runs a saved copy of the bundle's directory
 * (`$TMPDIR/sbx-bench-agent-bundle/agent-bundle`) instead: the agent before a change.
 */
async function agentCommand(): Promise<readonly string[]> {
  // A copy of an earlier bundle directory, for an A/B of an agent change on one machine and load.
  const saved = process.env['BENCH_AGENT_BUNDLE'];
  if (saved !== undefined && saved !== '') {
    const watch = pathToFileURL(path.join(saved, 'parent-watch.mjs')).href;
    return ['--import', watch, path.join(saved, 'agent.mjs')];
  }
  if (process.env['BENCH_AGENT'] === 'tsx') return ['--import', 'tsx', 'services/agent/src/main.ts'];
  const bundle = await prepareAgentBundle(path.join(tmpdir(), 'sbx-bench-agent-bundle'));
  return bundle.hostCommand.args;
}

const BENCH_AGENT_UID = 65_534;

/**
 * Starts the agent as its own process. LOG_LEVEL stays at `info`, the production default, so
 * the per-request log line is part of what is measured (written to a pipe this process drains).
 */
export async function startAgentProcess(env: Readonly<Record<string, string>> = {}): Promise<AgentProcess> {
  const workspace = realpathSync(makeTempDir('sbx-bench-ws-'));
  const key = SigningKey.generate();
  // e.g. BENCH_AGENT_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile the agent.
  const nodeArgs = (process.env['BENCH_AGENT_NODE_ARGS'] ?? '').split(' ').filter((arg) => arg !== '');
  // The agent refuses root: a root bench runs it as an unprivileged user owning its workspace.
  const user = process.getuid?.() === 0 ? { uid: BENCH_AGENT_UID, gid: BENCH_AGENT_UID } : {};
  if (user.uid !== undefined) chownSync(workspace, user.uid, user.gid);
  const child = spawnTracked(process.execPath, [...nodeArgs, ...(await agentCommand())], {
    ...user,
    cwd: REPO_ROOT,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      SANDBOX_ID,
      SANDBOX_SIGNING_KEY: key.toBase64url(),
      SANDBOX_TOKEN_ISSUER: ISSUER,
      WORKSPACE_ROOT: workspace,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    // stdin a pipe: the bundle's parent watch stops the agent when this process goes.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stop = async (): Promise<void> => {
    await stopTracked(child);
    removeTempDir(workspace);
  };
  try {
    const httpUrl = await listeningUrl(child);
    const token = mintCapabilityToken({
      key,
      issuer: ISSUER,
      subject: 'usr_bench',
      sandboxId: SANDBOX_ID,
      scopes: ['fs:rw', 'process', 'shell'],
      ttlSeconds: 3600,
    }).token;
    return { pid: child.pid!, httpUrl, wsUrl: httpUrl.replace(/^http/, 'ws'), workspace, token, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
