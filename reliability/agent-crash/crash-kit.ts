// What the agent-crash suite shares: a broker on real Postgres whose sandboxes are real
// agents under bubblewrap (useLocalBroker), SDK sessions on threads of their own, the
// agent's pid as its provider knows it (killed by that pid only, once it is checked to be
// this sandbox's agent), waiting for the restart, the data directory's mounts and the
// workspace's files as hashes.
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect } from '@jest/globals';
import { BrokerClient, BrokerSession, type RetryPolicy } from '../../packages/client/src/index.js';
import type { RestartPolicy } from '../../services/broker/src/providers/agent-restarts.js';
import type { LocalProvider } from '../../services/broker/src/providers/local-provider.js';
import {
  cmdlineOf,
  environOf,
  isAlive,
  startLocalKit,
  type LocalKit,
} from '../../services/broker/test/providers/local-provider-kit.js';
import { ALL_CALLER_SCOPES } from '../../services/broker/test/support/broker-harness.js';
import { backends } from '../../services/broker/test/support/test-database.js';
import { until } from '../../services/broker/test/support/until.js';
import { useBroker, type BrokerFixture } from '../../services/broker/test/support/use-broker.js';

/** `SBX_RELIABILITY=long` (scripts/run-reliability.mjs): more crash rounds. */
export const LONG = process.env['SBX_RELIABILITY'] === 'long';

const postgres = backends.find((backend) => backend.name === 'postgres');
/** The suite needs the real Postgres (test-database.ts warns loudly, or fails under CI, without it). */
export const describeOnPostgres = postgres?.available === true ? describe : describe.skip;

/**
 * What a client that must ride out an agent restart passes (the SDK's default gives up
 * after 5 attempts whose waits may add up to next to nothing): up to ~20 s of backoff.
 */
export const RIDE_OUT_RESTARTS: RetryPolicy = { maxAttempts: 12, baseDelayMs: 200, maxDelayMs: 2000 };

export type CrashBroker = BrokerFixture<LocalProvider> & {
  /** The provider's data directory (workspaces, sandbox state), the fixture's own. */
  readonly dataDir: () => string;
};

/** A broker for the calling file: real Postgres, the local provider under bubblewrap. */
export function useCrashBroker(restartPolicy: Partial<RestartPolicy> = {}): CrashBroker {
  let kit: LocalKit | undefined;
  const broker = useBroker<LocalProvider>(postgres!, {
    provider: async (onAgentExit) =>
      (kit = await startLocalKit({ isolation: 'bubblewrap', onAgentExit, restartPolicy })).provider,
    settings: { provisioningWaitMs: 60_000 },
    logLevel: 'info',
  });
  afterAll(async () => {
    await kit?.dispose();
  });
  return Object.assign(broker, {
    dataDir(): string {
      if (kit === undefined) throw new Error('the crash broker is used outside its beforeAll/afterAll');
      return kit.dataDir;
    },
  });
}

/** An SDK client of the broker holding every caller scope (it may name the actor). */
export async function clientOf(broker: CrashBroker): Promise<BrokerClient> {
  return new BrokerClient({
    baseUrl: broker.url,
    apiKey: await broker.apiKey({ scopes: ALL_CALLER_SCOPES }),
  });
}

/** A session on `threadId`: an agent's (fs:rw, process) or a human's (fs:rw, shell). */
export function sessionOn(
  client: BrokerClient,
  threadId: string,
  actor: 'agent' | 'human' = 'agent',
): Promise<BrokerSession> {
  return BrokerSession.ensure(client, {
    scope: { type: 'thread', id: threadId },
    actor: { type: actor, id: `${actor}_${threadId}` },
  });
}

/** The sandbox's agent pid, from its provider, checked to be that sandbox's agent process. */
export function agentPidOf(broker: CrashBroker, sandboxId: string): number {
  const pid = broker.provider.agentPid(sandboxId);
  if (pid === undefined) throw new Error(`sandbox ${sandboxId} has no running agent`);
  expect(environOf(pid)).toContain(`SANDBOX_ID=${sandboxId}`);
  expect(cmdlineOf(pid)).toMatch(/node/);
  return pid;
}

/** kill -9 of the sandbox's agent (by its pid, nothing else); returns the pid killed. */
export function killAgent(broker: CrashBroker, sandboxId: string): number {
  const pid = agentPidOf(broker, sandboxId);
  process.kill(pid, 'SIGKILL');
  return pid;
}

/** Waits until another agent than `killed` serves the sandbox and answers its health check. */
export async function restarted(broker: CrashBroker, sandboxId: string, killed: number): Promise<number> {
  await until(async () => {
    const pid = broker.provider.agentPid(sandboxId);
    return pid !== undefined && pid !== killed && (await broker.provider.status(sandboxId)) === 'running';
  }, `the agent of ${sandboxId} to be restarted`);
  expect(isAlive(killed)).toBe(false);
  return agentPidOf(broker, sandboxId);
}

export async function stateOf(broker: CrashBroker, sandboxId: string) {
  return broker.database.prisma.sandbox.findUniqueOrThrow({ where: { id: sandboxId } });
}

/** Mount points under the broker's data directory (`mount | grep <dataDir>`). */
export function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => (line.split(' ')[1] ?? '').replaceAll('\\040', ' '))
    .filter((target) => target === dir || target.startsWith(`${dir}/`));
}

/** Where the host sees the sandbox's workspace (its volume, mounted while an agent runs). */
export function hostWorkspace(dataDir: string, sandboxId: string): string {
  return path.join(dataDir, 'workspaces', sandboxId);
}

/** Every entry under `dir` on the host: path → type and, for files, sha256. */
export function treeHashes(dir: string, skip: (name: string) => boolean = () => false): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(dir, rel)).toSorted()) {
      if (skip(name)) continue;
      const relative = rel === '' ? name : `${rel}/${name}`;
      const full = path.join(dir, relative);
      const entry = lstatSync(full);
      if (entry.isSymbolicLink()) found.set(relative, `link ${readlinkSync(full)}`);
      else if (entry.isDirectory()) {
        found.set(relative, `dir ${(entry.mode & 0o7777).toString(8)}`);
        walk(relative);
      } else found.set(relative, `file ${(entry.mode & 0o7777).toString(8)} ${sha256(readFileSync(full))}`);
    }
  };
  walk('');
  return found;
}

export function sha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Upload temporaries the agent leaves next to their targets (atomic-writer.ts). */
export function uploadTemporaries(dir: string): string[] {
  return [...treeHashes(dir).keys()].filter((rel) => path.basename(rel).startsWith('.sbx-upload-'));
}
