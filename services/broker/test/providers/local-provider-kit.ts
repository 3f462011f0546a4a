// A local provider on a fresh temporary data directory, with its log captured, and
// /proc helpers to see which processes belong to a sandbox.
import { execFileSync } from 'node:child_process';
import {
  chownSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '@sbx/service-kit';
import { mintCapabilityToken, type SigningKey } from '@sbx/tokens';
import { LocalProvider, type LocalProviderOptions } from '../../src/providers/local-provider.js';
import type { SandboxSpec } from '../../src/providers/provider.js';

export interface LocalKit {
  readonly dataDir: string;
  readonly provider: LocalProvider;
  /** Every line the broker logged, debug included. */
  readonly logs: string[];
  dispose(): Promise<void>;
}

/**
 * Deletes a data directory, unmounting the workspace volumes a broker that never closed
 * (killed, or exited without close()) left mounted in it.
 */
export function removeDataDir(dataDir: string): void {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((target) => target.startsWith(`${dataDir}/`));
  // Deepest first: the workspaces directory is a mount of itself holding the volumes.
  for (const target of mounts.toReversed()) execFileSync('umount', ['-l', target]);
  rmSync(dataDir, { recursive: true, force: true });
}

/** A host user for agents these tests start by hand: the agent refuses to run as root. */
const TEST_AGENT_UID = 65_534;

/**
 * Spawn options that start an agent as an unprivileged user when the tests run as root,
 * giving it `paths` (its workspace); empty otherwise.
 */
export function asAgentUser(...paths: string[]): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  for (const file of paths) chownSync(file, TEST_AGENT_UID, TEST_AGENT_UID);
  return { uid: TEST_AGENT_UID, gid: TEST_AGENT_UID };
}

export function newDataDir(): string {
  return realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-provider-')));
}

/**
 * Where a broker keeps its data in production (not under /tmp, which every sandbox gets
 * as a tmpfs of its own): what hides the data directory is then the hiding mount alone.
 */
export function newDataDirOutsideTmp(): string {
  return realpathSync(mkdtempSync('/var/tmp/sbx-provider-'));
}

export function captureLogger(logs: string[]): LocalProviderOptions['logger'] {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  return createLogger({ service: 'broker-test', level: 'debug', destination: sink });
}

export async function startLocalKit(options: Partial<LocalProviderOptions> = {}): Promise<LocalKit> {
  const dataDir = options.dataDir ?? newDataDir();
  const logs: string[] = [];
  const provider = await LocalProvider.open({ logger: captureLogger(logs), ...options, dataDir });
  return {
    dataDir,
    provider,
    logs,
    async dispose() {
      await provider.close();
      removeDataDir(dataDir);
    },
  };
}

export function tokenFor(
  spec: SandboxSpec,
  scopes: string[] = ['fs:ro'],
  key: SigningKey = spec.signingKey,
): string {
  return mintCapabilityToken({
    key,
    issuer: spec.tokenIssuer,
    subject: 'user_test',
    sandboxId: spec.sandboxId,
    scopes,
    ttlSeconds: 300,
  }).token;
}

function procPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

function readOrEmpty(read: () => string): string {
  try {
    return read();
  } catch {
    return '';
  }
}

export function environOf(pid: number): string[] {
  return readOrEmpty(() => readFileSync(`/proc/${pid}/environ`, 'utf8')).split('\0');
}

export function cmdlineOf(pid: number): string {
  return readOrEmpty(() => readFileSync(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ');
}

/**
 * Live agent processes of a sandbox: the node process whose environment names it (the
 * bwrap that built its view has the same environment, and is not the agent).
 */
export function agentPidsOf(sandboxId: string): number[] {
  return procPids().filter(
    (pid) =>
      isAlive(pid) &&
      environOf(pid).includes(`SANDBOX_ID=${sandboxId}`) &&
      readOrEmpty(() => readFileSync(`/proc/${pid}/comm`, 'utf8')).trim() === 'node',
  );
}

/**
 * Live processes of a sandbox's own host user (a root broker gives each sandbox one): under
 * bubblewrap the way to find them, since their working directory lies in the sandbox's own
 * mount of the workspace, which /proc shows relative to that mount.
 */
export function processesOfSandbox(dataDir: string, sandboxId: string): number[] {
  const record = JSON.parse(
    readFileSync(path.join(dataDir, 'sandboxes', sandboxId, 'sandbox.json'), 'utf8'),
  ) as { hostUid?: number };
  if (record.hostUid === undefined) throw new Error('the sandbox has no host user of its own');
  return procPids().filter(
    (pid) =>
      isAlive(pid) &&
      /^Uid:\s+(\d+)/m.exec(readOrEmpty(() => readFileSync(`/proc/${pid}/status`, 'utf8')))?.[1] ===
        String(record.hostUid),
  );
}

export function processesWorkingIn(dir: string): number[] {
  return procPids().filter((pid) => {
    const cwd = readOrEmpty(() => readlinkSync(`/proc/${pid}/cwd`));
    return isAlive(pid) && (cwd === dir || cwd.startsWith(`${dir}/`));
  });
}

/** Alive and not a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = readOrEmpty(() => readFileSync(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.[0];
  return state !== undefined && state !== 'Z';
}
