// The processes the fuzz suites attack: each its own node process (so that its crash is
// seen as an exit, and its memory is its own), with memory-probe.ts preloaded to read
// its heap after a forced GC. A real agent runs its entry point (services/agent/src/main.ts)
// configured by its environment only; the broker runs broker-target.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsxLoader = pathToFileURL(createRequire(`${root}package.json`).resolve('tsx')).href;
const probe = pathToFileURL(fileURLToPath(new URL('./memory-probe.ts', import.meta.url))).href;
const START_CEILING_MS = 120_000;

export interface Memory {
  readonly rss: number;
  readonly heapUsed: number;
}

export interface Target {
  readonly child: ChildProcess;
  /** What the target printed when ready (its URL and what it made). */
  readonly ready: Record<string, unknown>;
  /** Error lines the target logged (level ≥ 50), and anything it wrote to stderr that was not a probe. */
  readonly errors: string[];
  /** Whether the process is still running. */
  alive(): boolean;
  /** RSS and heap after a forced GC, as the process itself reports them. */
  memory(): Promise<Memory>;
  stop(): Promise<void>;
}

interface SpawnSpec {
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  readonly uid?: number;
  /** The line that says the target is ready, and what it carries. */
  readonly readyLine: (record: Record<string, unknown>) => Record<string, unknown> | undefined;
}

function startTarget(spec: SpawnSpec): Promise<Target> {
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', tsxLoader, '--import', probe, ...spec.args],
    {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...spec.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
      ...(spec.uid === undefined ? {} : { uid: spec.uid, gid: spec.uid }),
    },
  );
  const errors: string[] = [];
  const seen: string[] = [];
  const probes: ((memory: Memory) => void)[] = [];
  const read = (line: string): Record<string, unknown> | undefined => {
    try {
      const record: unknown = JSON.parse(line);
      return typeof record === 'object' && record !== null ? (record as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };
  createInterface({ input: child.stderr }).on('line', (line) => {
    const record = read(line);
    if (record?.['fuzz_memory'] !== undefined) probes.shift()?.(record['fuzz_memory'] as Memory);
    else if (typeof record?.['fuzz_log'] === 'string') errors.push(record['fuzz_log']);
    else if (line.trim() !== '') errors.push(`stderr: ${line}`);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`target did not start:\n${seen.join('\n')}`)),
      START_CEILING_MS,
    );
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `target exited (${code ?? signal}) before it was ready:\n${seen.join('\n')}\n${errors.join('\n')}`,
        ),
      );
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      const record = read(line);
      if (seen.length < 40) seen.push(line);
      // The agent logs JSON at info: its error lines count like the broker's forwarded ones.
      if (typeof record?.['level'] === 'number' && record['level'] >= 50) errors.push(line);
      const ready = record === undefined ? undefined : spec.readyLine(record);
      if (ready === undefined) return;
      clearTimeout(timer);
      const alive = (): boolean => child.exitCode === null && child.signalCode === null;
      resolve({
        child,
        ready,
        errors,
        alive,
        memory: () =>
          new Promise<Memory>((resolveMemory, rejectMemory) => {
            if (!alive())
              return rejectMemory(
                new Error(
                  `the target is not running (exit code ${child.exitCode}, signal ${child.signalCode}):\n${errors.join('\n')}`,
                ),
              );
            probes.push(resolveMemory);
            child.kill('SIGUSR2');
          }),
        stop: async () => {
          if (!alive()) return;
          const exited = new Promise((done) => child.once('exit', done));
          child.kill('SIGTERM');
          const ceiling = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 30_000);
          await exited;
          clearTimeout(ceiling);
        },
      });
    });
  });
}

/** The broker (broker-target.ts) on a database the test created and migrated. */
export function startBrokerTarget(databaseUrl: string): Promise<Target> {
  return startTarget({
    args: [fileURLToPath(new URL('./broker-target.ts', import.meta.url)), databaseUrl],
    env: {},
    readyLine: (record) => record['fuzz_ready'] as Record<string, unknown> | undefined,
  });
}

/** An unprivileged uid for the agent when the tests run as root (the agent refuses root). */
const AGENT_UID = process.getuid?.() === 0 ? 250_000 + Math.floor(Math.random() * 10_000) : undefined;

/** The agent's entry point with a fresh workspace, `env` on top of what it needs. */
export async function startAgentTarget(
  env: Record<string, string>,
): Promise<Target & { readonly workspace: string }> {
  const workspace = mkdtempSync(path.join(tmpdir(), 'sbx-fuzz-ws-'));
  if (AGENT_UID !== undefined) chownSync(workspace, AGENT_UID, AGENT_UID);
  try {
    const target = await startTarget({
      args: ['services/agent/src/main.ts'],
      env: { WORKSPACE_ROOT: workspace, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
      ...(AGENT_UID === undefined ? {} : { uid: AGENT_UID }),
      readyLine: (record) => (record['msg'] === 'agent listening' ? { url: record['url'] } : undefined),
    });
    return {
      ...target,
      workspace,
      stop: async () => {
        await target.stop();
        // What its sandbox's processes left behind in the group goes too.
        try {
          process.kill(-target.child.pid!, 'SIGKILL');
        } catch {
          // The group is gone already.
        }
        rmSync(workspace, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(workspace, { recursive: true, force: true });
    throw err;
  }
}
