import type { SandboxEnvironment } from '../../src/adapters/sandbox-env-file.js';
import { chownSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, SandboxNamespace } from '@sbx/service-kit';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import type { AgentContext, AgentFeature } from '../../src/agent-context.js';
import { staticKeySource, type KeySource } from '../../src/adapters/key-source.js';
import type { RevocationList } from '../../src/adapters/revocation-list.js';
import { bubblewrapLauncher, directLauncher, type Launcher } from '../../src/adapters/launcher.js';
import { PathGuard } from '../../src/domain/files/path-guard.js';
import { createAuthenticator, type Authenticator } from '../../src/http/authenticator.js';
import { createPromAgentMetrics } from '../../src/adapters/prom-agent-metrics.js';
import { startAgentServer, type AgentServerOptions, type RunningAgent } from '../../src/server.js';

export const TEST_ISSUER = 'sbx-broker-test';

export interface TestAgent extends RunningAgent {
  readonly ctx: AgentContext;
  readonly key: SigningKey;
  /** The workspace's host path (where the test reads and writes behind the agent's back). */
  readonly workspace: string;
  /** The workspace as the sandbox's processes and the file API name it (its host path in these tests). */
  readonly sandboxWorkspace: string;
  /** Every log line the agent wrote, to assert what was (not) logged. */
  readonly logs: string[];
  /** A capability token for this sandbox with the given scopes. */
  token(
    scopes: string[],
    options?: {
      ttlSeconds?: number;
      issuedSecondsAgo?: number;
      sandboxId?: string;
      key?: SigningKey;
      sub?: string;
    },
  ): string;
}

export interface TestAgentOptions {
  readonly features?: (ctx: AgentContext) => AgentFeature[];
  readonly launcher?: (workspace: string) => Launcher;
  /** Run user processes in a real bubblewrap sandbox (as an unprivileged test user when root). */
  readonly confined?: { readonly network?: boolean; readonly hidePaths?: readonly string[] };
  readonly wsAuthTimeoutMs?: number;
  /** Hardening options of the server (server.ts): unauthenticated WebSocket cap, origins, HSTS. */
  readonly server?: Pick<AgentServerOptions, 'wsMaxUnauthenticated' | 'allowedOrigins' | 'hstsMaxAgeSeconds'>;
  readonly now?: () => number;
  /** The revocation list the authenticator consults (none by default). */
  readonly revocations?: RevocationList;
  /** The operator's bearer for GET /metrics (AGENT_METRICS_TOKEN); none by default. */
  readonly metricsToken?: string;
  /** The client policy's injected variables (AGENT_SANDBOX_ENV_FILE); none by default. */
  readonly sandboxEnv?: SandboxEnvironment;
  /** Another authenticator than the offline JWT one (opaque tokens, D20), given the agent's key and id. */
  readonly authenticator?: (agent: {
    keys: KeySource;
    sandboxId: string;
    now: () => number;
  }) => Authenticator;
}

/**
 * A real agent on 127.0.0.1:0 with a fresh temporary workspace and key. Dispose it
 * (`await using agent = await startTestAgent(…)` or `await agent.close()`) to stop
 * it and delete the workspace.
 */
export async function startTestAgent(options: TestAgentOptions = {}): Promise<TestAgent> {
  const workspace = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-agent-ws-')));
  const key = SigningKey.generate();
  const keys = staticKeySource(key.toBase64url());
  const now = options.now ?? (() => Date.now());
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  const sandboxId = `sb_test_${path.basename(workspace).slice(-6)}`;
  const sandbox =
    options.confined === undefined ? undefined : await startTestSandbox(workspace, options.confined);
  const metrics = createPromAgentMetrics();
  const ctx: AgentContext = {
    sandboxId,
    workspace: new PathGuard(workspace, options.confined?.hidePaths ?? []),
    logger: createLogger({ service: 'agent-test', level: 'debug', destination: sink }),
    now,
    launcher: sandbox?.launcher ?? options.launcher?.(workspace) ?? directLauncher(),
    keys,
    authenticator:
      options.authenticator?.({ keys, sandboxId, now }) ??
      createAuthenticator({
        keys,
        sandboxId,
        issuer: TEST_ISSUER,
        maxTtlSeconds: 3600,
        now,
        ...(options.revocations === undefined ? {} : { revocations: options.revocations }),
        metrics,
      }),
    metrics,
    metricsToken: options.metricsToken,
    sandboxEnv: options.sandboxEnv,
  };
  const running = await startAgentServer(ctx, options.features?.(ctx) ?? [], {
    host: '127.0.0.1',
    port: 0,
    wsAuthTimeoutMs: options.wsAuthTimeoutMs ?? 5000,
    ...options.server,
  });
  const close = async (): Promise<void> => {
    await running.close();
    await sandbox?.namespace.close();
    rmSync(workspace, { recursive: true, force: true });
  };
  return {
    ...running,
    ctx,
    key,
    workspace,
    sandboxWorkspace: ctx.workspace.workspace,
    logs,
    close,
    [Symbol.asyncDispose]: close,
    token(scopes, tokenOptions = {}) {
      return mintCapabilityToken({
        key: tokenOptions.key ?? key,
        issuer: TEST_ISSUER,
        subject: tokenOptions.sub ?? 'usr_test',
        sandboxId: tokenOptions.sandboxId ?? sandboxId,
        scopes,
        ttlSeconds: tokenOptions.ttlSeconds ?? 300,
        threadId: 'thr_test',
        sessionId: 'ssn_test',
        now: () => now() - (tokenOptions.issuedSecondsAgo ?? 0) * 1000,
      }).token;
    },
  };
}

/** A host uid for a test sandbox when the tests run as root: user code must never be root. */
export const TEST_SANDBOX_UID =
  process.getuid?.() === 0 ? 250_000 + randomInt(10_000) : (process.getuid?.() ?? 1000);

async function startTestSandbox(
  workspace: string,
  confined: NonNullable<TestAgentOptions['confined']>,
): Promise<{ launcher: Launcher; namespace: SandboxNamespace }> {
  const runAs = process.getuid?.() === 0 ? { uid: TEST_SANDBOX_UID, gid: TEST_SANDBOX_UID } : undefined;
  if (runAs !== undefined) chownSync(workspace, runAs.uid, runAs.gid);
  const namespace = await SandboxNamespace.start({
    bwrapPath: '/usr/bin/bwrap',
    workspaceRoot: workspace,
    network: confined.network ?? false,
    ...(confined.hidePaths === undefined ? {} : { hidePaths: confined.hidePaths }),
    ...(runAs === undefined ? {} : { runAs }),
  });
  return { launcher: bubblewrapLauncher(namespace), namespace };
}
