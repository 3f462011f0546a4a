// The first hour of a new user, from README.md alone: the broker started with the README's own
// start command (`npx -y pnpm@12.4.2 start`, on a fresh data directory and a free port), then
// every shell block of "Five-minute walkthrough" and "From your own code: the SDK", as written
// and in the README's order, in one bash, with only the URL and the admin key the broker printed
// substituted. Blocks that say "# Interactive" on their first line are skipped; the curl step's
// shell client (scripts/ws-shell.mjs) reads `exit` from stdin. Slow: the broker bundle is built,
// the packages are packed, and the SDK is installed from its tarballs with npm (registry access).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  isInteractive,
  readReadme,
  ROOT,
  sampleOutput,
  shellBlocks,
  substitute,
  type ShellBlock,
} from './readme-blocks.js';

const START = 'npx -y pnpm@12.4.2 start';
const SECTIONS = ['Five-minute walkthrough', 'From your own code: the SDK'];
const BROKER_START_MS = 4 * 60_000;
const WALKTHROUGH_MS = 12 * 60_000;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment of a person's shell: nothing of jest, pnpm or a configured broker. */
function personEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const dropped = /^(NODE_OPTIONS|npm_.*|SBX_.*|DATABASE_URL|REDIS_URL|BROKER_.*|PORT|HOST)$/;
  const kept = Object.entries(process.env).filter(([name]) => !dropped.test(name));
  return { ...Object.fromEntries(kept), ...extra };
}

/** Ends a process group started `detached`, SIGKILL after `graceMs`. */
async function endGroup(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const kill = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-(child.pid as number), signal);
    } catch {
      // Already gone.
    }
  };
  kill('SIGTERM');
  const timer = setTimeout(() => kill('SIGKILL'), graceMs);
  await closed;
  clearTimeout(timer);
}

interface Broker {
  readonly child: ChildProcess;
  readonly url: string;
  readonly key: string;
}

/** The README's start command at the repository's root; resolves on its banner. */
function startBroker(command: string, dataDir: string): Promise<Broker> {
  const child = spawn('sh', ['-c', command], {
    cwd: ROOT,
    detached: true,
    env: personEnv({ PORT: '0', BROKER_DATA_DIR: dataDir }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`no banner within ${BROKER_START_MS} ms`), BROKER_START_MS);
    const fail = (why: string): void => {
      clearTimeout(timer);
      void endGroup(child, 5000);
      reject(new Error(`${command}: ${why}\n${text.slice(-4000)}`));
    };
    const read = (chunk: Buffer): void => {
      text += chunk.toString('utf8');
      const url = /listening on (http:\/\/\S+)/.exec(text)?.[1];
      const key = /admin API key \(shown once, store it now\): (\S+)/.exec(text)?.[1];
      if (url === undefined || key === undefined) return;
      clearTimeout(timer);
      resolve({ child, url, key });
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('close', (code) => fail(`exited ${String(code)} before its banner`));
  });
}

/** Runs a bash script to its end (its whole process group killed past the deadline). */
function runScript(file: string, env: NodeJS.ProcessEnv, stdin: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [file], { cwd: ROOT, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.stdin.end(stdin);
    const timer = setTimeout(() => void endGroup(child, 1000), WALKTHROUGH_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      const text = (chunks: Buffer[]): string => Buffer.concat(chunks).toString('utf8');
      resolve({ code, stdout: text(out), stderr: text(err) });
    });
  });
}

/** Unmounts what a root broker left mounted under `dir` (workspace volumes), then removes it. */
function removeDataDir(dir: string): void {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((target) => target.startsWith(`${dir}/`));
  for (const target of mounts) execFileSync('umount', ['-l', target]);
  rmSync(dir, { recursive: true, force: true });
}

const readme = readReadme();
const blocks = shellBlocks(readme).filter((b) => SECTIONS.includes(b.section) && !isInteractive(b));
/** The block that holds `text`: the tests find the README's steps by what they run. */
const blockWith = (text: string): number => {
  const index = blocks.findIndex((b) => b.code.includes(text));
  if (index < 0) throw new Error(`no walkthrough block runs ${text}`);
  return index;
};

let broker: Broker | undefined;
let dataDir: string;
let scratch: string;
let run: Run;
/** Each block's stdout, by block index. */
let outputs: string[] = [];
let work: string;

const shown = (): string =>
  `exit ${String(run.code)}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr.slice(-6000)}`;

function outputOf(text: string): string {
  const output = outputs[blockWith(text)];
  if (output === undefined)
    throw new Error(`the walkthrough stopped before the block running ${text}:\n${shown()}`);
  return output;
}

async function admin(route: string): Promise<unknown> {
  const res = await fetch(`${broker?.url}${route}`, { headers: { authorization: `Bearer ${broker?.key}` } });
  expect(res.status).toBe(200);
  return res.json();
}

/** The sandbox's state and live bindings, from the admin API (the printed key is an admin's). */
async function sandboxState(sandboxId: string): Promise<{ state: unknown; live: unknown }> {
  const detail = (await admin(`/admin/sandboxes/${sandboxId}`)) as { state: unknown; live_bindings: unknown };
  return { state: detail.state, live: detail.live_bindings };
}

beforeAll(
  async () => {
    const setUp = shellBlocks(readme).filter((b: ShellBlock) => b.section.startsWith('Set-up'));
    if (!setUp.some((b) => b.code.split('\n').some((line) => line.trim().endsWith(`&& ${START}`))))
      throw new Error(`README.md's set-up no longer starts the broker with ${START}`);
    dataDir = realpathSync(mkdtempSync('/var/tmp/sbx-readme-'));
    scratch = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-readme-')));
    broker = await startBroker(START, dataDir);
    const first = blockWith('BROKER=');
    const script = [
      'set -eux',
      'shopt -s expand_aliases',
      ...blocks.flatMap((block, index) => {
        const code =
          index === first
            ? substitute(substitute(block.code, 'BROKER', broker!.url), 'KEY', broker!.key)
            : block.code;
        return [code, `echo '@@ ${index}'`];
      }),
      'echo "@@WORK=$WORK"',
    ].join('\n');
    const file = path.join(scratch, 'walkthrough.sh');
    writeFileSync(file, script);
    // The step-3 shell client reads `exit` from this stdin.
    run = await runScript(file, personEnv({ SBX_HOME: path.join(scratch, 'sbx-home') }), 'exit\n');
    const parts = run.stdout.split(/^@@ \d+\n/m);
    outputs = parts.slice(0, -1);
    work = /^@@WORK=(.+)$/m.exec(run.stdout)?.[1] ?? '';
  },
  BROKER_START_MS + WALKTHROUGH_MS + 60_000,
);

afterAll(async () => {
  if (broker !== undefined) await endGroup(broker.child, 30_000);
  if (dataDir !== undefined) removeDataDir(dataDir);
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  if (work !== undefined && work.startsWith(tmpdir())) rmSync(work, { recursive: true, force: true });
}, 60_000);

describe(`README.md as a new user runs it, against \`${START}\``, () => {
  it('runs every walkthrough block top to bottom without a failing command', () => {
    if (run.code !== 0) throw new Error(`the walkthrough failed:\n${shown()}`);
    expect(outputs).toHaveLength(blocks.length);
  });

  it('1–3, curl: the agent writes and runs hello.py in its sandbox, the human opens a shell there', () => {
    const output = outputOf('BROKER=');
    expect(output).toMatch(/"path":"[^"]*\/hello\.py"/);
    expect(output).toContain('print("hi")');
    expect(output).toContain('"stdout":"hi\\n"');
    expect(run.stderr).toMatch(/\[shell sh_\S+\]/);
  });

  it("the CLI joins the agent's sandbox, not a new one: reads and runs its file, copies both ways, types into a shell", () => {
    const output = outputOf('alias sbx=');
    const agent = JSON.parse(readFileSync(path.join(work, 'agent.json'), 'utf8')) as {
      sandbox: { id: string };
    };
    expect(output).toContain(`logged in to ${broker?.url}`);
    expect(output).toContain(`thread thr_demo: sandbox ${agent.sandbox.id} at `);
    expect(output).toMatch(/ hello\.py$/m);
    // `sbx cat` prints hello.py as written (no final newline), then `sbx exec` prints hi.
    expect(output).toMatch(/^print\("hi"\)\n?hi$/m);
    expect(output).toMatch(/^45$/m);
    expect(output).toMatch(/^from-the-human$/m);
  });

  it("4: releasing the CLI's bindings and both curl sessions ends the sandbox", async () => {
    expect(outputOf('sbx release')).toContain('released 2 session(s) of thread thr_demo');
    const agent = JSON.parse(readFileSync(path.join(work, 'agent.json'), 'utf8')) as {
      sandbox: { id: string };
    };
    expect(await sandboxState(agent.sandbox.id)).toEqual({ state: 'terminated', live: 0 });
  });

  it('the SDK: packed, installed from its tarballs, examples/sdk prints what the README shows and releases', async () => {
    const sdk = blocks[blockWith('pack-packages')]!;
    const output = outputOf('pack-packages');
    const samples = sampleOutput(sdk.code, /node hello-sandbox\.mjs/);
    expect(samples.length).toBeGreaterThan(3);
    let rest = output;
    for (const sample of samples) {
      const found = sample.exec(rest);
      if (found === null) throw new Error(`README sample ${String(sample)} not in the output:\n${output}`);
      rest = rest.slice(found.index + found[0].length);
    }
    // A consumer's install: the package itself, not a link into this repository.
    const installed = realpathSync(path.join(work, 'app', 'node_modules', '@sbx', 'client'));
    expect(installed.startsWith(path.join(work, 'app'))).toBe(true);
    const sandboxId = /sandbox (sb_[^,\s]+),/.exec(output)?.[1];
    expect(sandboxId).toBeDefined();
    expect(await sandboxState(sandboxId as string)).toEqual({ state: 'terminated', live: 0 });
  });
});
