// A real broker that accepts the device issuer's access tokens (OIDC verified offline
// against its JWKS, as OIDC_ISSUER / OIDC_AUDIENCE configure it in production), with the
// local provider so sandboxes get real agents; and `sbx` spawned with its stderr read
// while it runs (the device login prints a code the test must act on before it exits).
import { spawn } from 'node:child_process';
import { afterAll, beforeAll } from '@jest/globals';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createOidcVerifier } from '../../../services/broker/src/domain/auth/oidc-verifier.js';
import { DEFAULT_TENANT_ID } from '../../../services/broker/src/domain/auth/principal.js';
import { LocalProvider } from '../../../services/broker/src/providers/local-provider.js';
import { captureLogger } from '../../../services/broker/test/providers/local-provider-kit.js';
import { startBrokerHarness } from '../../../services/broker/test/support/broker-harness.js';
import { useSmallWorkspaces } from '../../../services/broker/test/support/small-workspaces.js';
import {
  openPgliteTestDatabase,
  openPostgresTestDatabase,
  postgresAvailable,
  type TestDatabase,
} from '../../../services/broker/test/support/test-database.js';
import { startDeviceIssuer, type DeviceIssuer } from './device-issuer.js';
import { SBX_BIN, sbxEnv, sbxRunner, type SbxResult, type SbxRunner } from './support.js';

export interface OidcBroker {
  readonly url: string;
  readonly issuer: DeviceIssuer;
  close(): Promise<void>;
}

export async function startOidcBroker(): Promise<OidcBroker> {
  const issuer = await startDeviceIssuer();
  const dataDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-cli-oidc-')));
  const provider = await LocalProvider.open({ dataDir, logger: captureLogger([]), isolation: 'auto' });
  let database: TestDatabase | undefined;
  const cleanUp = async (): Promise<void> => {
    await provider.close();
    await database?.close();
    await issuer.oidc.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    database = postgresAvailable ? await openPostgresTestDatabase() : await openPgliteTestDatabase();
    const oidc = createOidcVerifier({
      issuer: issuer.oidc.issuer,
      audience: issuer.oidc.audience,
      jwksUri: issuer.oidc.jwksUri,
    });
    const harness = await startBrokerHarness({ database, provider, oidc, logLevel: 'warn' });
    // The device issuer's users name no tenant: theirs is the default one (small-workspaces.ts).
    await useSmallWorkspaces(harness.repositories, DEFAULT_TENANT_ID);
    return {
      url: harness.url,
      issuer,
      async close() {
        await harness.close();
        await cleanUp();
      },
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

export interface OidcBrokerFixture {
  /** The file's broker (started in a beforeAll registered by useOidcBroker). */
  readonly broker: () => OidcBroker;
  /** A CLI with its own home, removed after the file's tests. */
  readonly newCli: () => SbxRunner;
}

/** One broker trusting a device-flow test issuer for a whole test file, and CLI homes cleaned up after it. */
export function useOidcBroker(timeoutMs = 120_000): OidcBrokerFixture {
  let broker: OidcBroker | undefined;
  const runners: SbxRunner[] = [];
  beforeAll(async () => {
    broker = await startOidcBroker();
  }, timeoutMs);
  afterAll(async () => {
    for (const runner of runners) runner.close();
    await broker?.close();
  }, timeoutMs);
  return {
    broker: () => {
      if (broker === undefined) throw new Error('the OIDC broker is not started');
      return broker;
    },
    newCli: () => {
      const runner = sbxRunner();
      runners.push(runner);
      return runner;
    },
  };
}

export interface RunningSbx {
  /** Resolves with the first match of `pattern` in stderr so far or to come. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  readonly done: Promise<SbxResult>;
  /** Ends the process if it still runs (a test that failed half way). */
  kill(): void;
}

/** `sbx` as a process with its own SBX_HOME, stderr observable while it runs. */
export function spawnSbx(home: string, args: readonly string[]): RunningSbx {
  const child = spawn(process.execPath, [SBX_BIN, ...args], { env: sbxEnv(home), stdio: 'pipe' });
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  let closed = false;
  const waiters = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
    for (const wake of waiters) wake();
  });
  const done = new Promise<SbxResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      closed = true;
      resolve({ code: code ?? -1, stdout, stderr });
      for (const wake of waiters) wake();
    });
  });
  const waitForStderr = (pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const match = pattern.exec(stderr);
        if (match !== null) finish(() => resolve(match));
        else if (closed) finish(() => reject(new Error(`sbx exited; stderr:\n${stderr}`)));
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`no ${String(pattern)} in:\n${stderr}`))),
        timeoutMs,
      );
      const finish = (settle: () => void): void => {
        clearTimeout(timer);
        waiters.delete(check);
        settle();
      };
      waiters.add(check);
      check();
    });
  const kill = (): void => {
    if (!closed) child.kill('SIGKILL');
  };
  return { waitForStderr, done, kill };
}

/** `sbx login --device` against `broker`, with `act` playing the user once the CLI shows the code. */
export async function deviceLoginAt(
  broker: OidcBroker,
  home: string,
  act: (userCode: string) => void,
): Promise<SbxResult & { userCode: string }> {
  const args = ['login', '--broker', broker.url, '--device', '--issuer', broker.issuer.oidc.issuer];
  const running = spawnSbx(home, args);
  try {
    const [, userCode = ''] = await running.waitForStderr(/enter the code: ([A-Z]{4}-[A-Z]{4})\n/);
    act(userCode);
    return { ...(await running.done), userCode };
  } finally {
    running.kill();
  }
}
