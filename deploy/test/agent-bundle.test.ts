// scripts/build-agent.mjs, run for real as the agent image's build stage runs it: the bundle
// it writes, copied outside the repository, starts with plain node and a key file, answers
// /healthz, and its node-pty (the one native module) opens a terminal from there. Run as root
// (CI), the bundle is started as the image's entrypoint starts it: setpriv splits its identity
// (real ids its own, effective ids the user's, D22), since the agent refuses effective uid 0.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './manifests.js';

const BUILD_CEILING_MS = 120_000;
const START_CEILING_MS = 60_000;
/** As root: the image's `sbx-agent` and `sandbox`, here ids nothing else on this machine owns. */
const split = process.getuid?.() === 0;
const AGENT_ID = 290_000 + randomInt(10_000);
const USER_ID = AGENT_ID + 1;
/** The agent image's entrypoint, before tini (deploy/docker/agent.Dockerfile). */
// prettier-ignore
const SPLIT = [
  '--ruid', String(AGENT_ID), '--euid', String(USER_ID),
  '--rgid', String(AGENT_ID), '--egid', String(USER_ID), '--clear-groups', '--',
];

let work: string;
let outDir: string;

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A child with no settings leaked from jest (NODE_OPTIONS) or the developer's shell. */
function run(
  args: readonly string[],
  env: Record<string, string> = {},
  ceilingMs = START_CEILING_MS,
  file = process.execPath,
) {
  const child = spawn(file, args, {
    cwd: work,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exit = new Promise<Exit>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} still running after ${ceilingMs} ms`));
    }, ceilingMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  return { child, exit };
}

/** Resolves with the agent's URL from its "agent listening" log line. */
function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('agent did not log "agent listening"')),
      START_CEILING_MS,
    );
    child.once('exit', (code) => reject(new Error(`agent exited early (${code})`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const entry = (() => {
        try {
          return JSON.parse(line) as { msg?: string; url?: string };
        } catch {
          return {};
        }
      })();
      if (entry.msg === 'agent listening' && entry.url !== undefined) {
        clearTimeout(timer);
        resolve(entry.url);
      }
    });
  });
}

/** The bundle, started as the image starts it when this runs as root. */
function runAgent(env: Record<string, string>) {
  const main = path.join(outDir, 'main.mjs');
  return split
    ? run([...SPLIT, process.execPath, main], env, START_CEILING_MS, '/usr/bin/setpriv')
    : run([main], env);
}

/** The key where the providers put it: root's, readable by the agent's own group only. */
function writeKey(keyFile: string, key: string): void {
  mkdirSync(path.dirname(keyFile), { recursive: true, mode: 0o755 });
  writeFileSync(keyFile, key, { mode: split ? 0o440 : 0o600 });
  if (split) chownSync(keyFile, 0, AGENT_ID);
}

/** `Uid:` (real, effective, saved, filesystem) and the capability sets of a running process. */
function identityOf(pid: number): { uids: number[]; capabilities: string[] } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const uids = /^Uid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/).map(Number) ?? [];
  const capabilities = [...status.matchAll(/^Cap(Prm|Eff|Amb):\s+(\w+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  return { uids, capabilities };
}

function agentEnv(keyFile: string): Record<string, string> {
  const workspace = path.join(work, 'workspace');
  mkdirSync(workspace, { recursive: true });
  if (split) chownSync(workspace, USER_ID, USER_ID);
  return {
    SANDBOX_ID: 'sbx-bundle-test',
    SANDBOX_SIGNING_KEY_FILE: keyFile,
    WORKSPACE_ROOT: workspace,
    HOST: '127.0.0.1',
    PORT: '0',
    AGENT_LAUNCHER: 'direct',
    LOG_LEVEL: 'info',
  };
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'sbx-agent-bundle-'));
  chmodSync(work, 0o755); // the split agent reads its bundle as the user
  outDir = path.join(work, 'opt', 'sbx', 'agent');
  const build = await run([path.join(ROOT, 'scripts', 'build-agent.mjs'), outDir], {}, BUILD_CEILING_MS).exit;
  if (build.code !== 0) throw new Error(`build-agent failed: ${build.stderr}`);
}, BUILD_CEILING_MS + 10_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('scripts/build-agent.mjs', () => {
  it('writes one bundle and node-pty next to it, nothing of the repository', () => {
    expect(existsSync(path.join(outDir, 'main.mjs'))).toBe(true);
    expect(existsSync(path.join(outDir, 'node_modules', 'node-pty', 'build', 'Release', 'pty.node'))).toBe(
      true,
    );
    expect(existsSync(path.join(outDir, 'node_modules', 'node-pty', 'src'))).toBe(false);
  });

  it(
    'starts the bundle with plain node and a key file (as root: split as the image does); /healthz answers 200; SIGTERM stops it',
    async () => {
      mkdirSync(path.join(work, 'run'), { mode: 0o755 });
      const key = randomBytes(32).toString('base64url');
      const keyFile = path.join(work, 'run', 'sbx', 'agent.key');
      writeKey(keyFile, key);
      const agent = runAgent(agentEnv(keyFile));
      try {
        const url = await listeningUrl(agent.child);
        const health = await fetch(`${url}/healthz`);
        expect(health.status).toBe(200);
        // It read a key only its own group may read, holding no capability and no root id.
        expect(split ? identityOf(agent.child.pid ?? 0) : 'not root here').toEqual(
          split
            ? {
                uids: [AGENT_ID, USER_ID, USER_ID, USER_ID],
                capabilities: ['Prm 0000000000000000', 'Eff 0000000000000000', 'Amb 0000000000000000'],
              }
            : 'not root here',
        );
      } finally {
        agent.child.kill('SIGTERM');
      }
      const exit = await agent.exit;
      expect(exit.code).toBe(0);
      expect(`${exit.stdout}${exit.stderr}`).not.toContain(key);
    },
    START_CEILING_MS * 2,
  );

  it(
    'refuses to start without its key, saying which setting is missing',
    async () => {
      const exit = await runAgent({ ...agentEnv(''), SANDBOX_SIGNING_KEY_FILE: '' }).exit;
      expect(exit.code).toBe(1);
      expect(exit.stderr).toMatch(/SANDBOX_SIGNING_KEY/);
    },
    START_CEILING_MS + 10_000,
  );

  it(
    "opens a terminal with the bundle's own node-pty",
    async () => {
      const script = [
        "const { createRequire } = require('node:module');",
        `const pty = createRequire(${JSON.stringify(path.join(outDir, 'main.mjs'))})('node-pty');`,
        "const term = pty.spawn('/bin/sh', ['-c', 'echo pty-$((20 + 22))'], {});",
        'term.onData((data) => process.stdout.write(data));',
        'term.onExit(({ exitCode }) => process.exit(exitCode));',
      ].join('\n');
      const exit = await run(['-e', script]).exit;
      expect(exit.stderr).toBe('');
      expect(exit.stdout).toContain('pty-42');
      expect(exit.code).toBe(0);
    },
    START_CEILING_MS + 10_000,
  );
});

// Only root can show it: the agent image starts as root, and the agent must not stay so.
const asRoot = split ? describe : describe.skip;

asRoot('the bundle started as root without the split', () => {
  it(
    'refuses to run as root: the image must split its identity first',
    async () => {
      const keyFile = path.join(work, 'run', 'root', 'agent.key');
      writeKey(keyFile, randomBytes(32).toString('base64url'));
      const exit = await run([path.join(outDir, 'main.mjs')], agentEnv(keyFile)).exit;
      expect(exit.code).toBe(1);
      expect(exit.stderr).toMatch(/must not run as root/);
    },
    START_CEILING_MS + 10_000,
  );
});
