import { sandboxEnvironmentFile, type SandboxEnvironment } from './adapters/sandbox-env-file.js';
import { realpathSync, mkdirSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import {
  AGENT_CODE_DIR,
  closeInheritedDescriptors,
  ConfigError,
  createLogger,
  SandboxNamespace,
  type Logger,
} from '@sbx/service-kit';
import { loadAgentConfig, type AgentConfig } from './config.js';
import { fileKeySource, staticKeySource, type KeySource } from './adapters/key-source.js';
import { runIsolationProbe } from './isolation-probe.js';
import {
  currentIdentity,
  ownFileReader,
  type AgentIdentity,
  type OwnFileReader,
} from './adapters/agent-identity.js';
import { reopenStateDirectory, STATE_FILES } from './adapters/state-directory.js';
import { emptyRevocationList, fileRevocationList, type RevocationList } from './adapters/revocation-list.js';
import { bubblewrapLauncher, directLauncher, type Launcher } from './adapters/launcher.js';
import { createAuthenticator } from './http/authenticator.js';
import { createIntrospectingAuthenticator } from './http/introspecting-authenticator.js';
import { createPromAgentMetrics } from './adapters/prom-agent-metrics.js';
import type { AgentContext, AgentFeature } from './agent-context.js';
import { startAgentServer } from './server.js';
import { PathGuard } from './domain/files/path-guard.js';
import { execFeature } from './http/exec/exec-feature.js';
import { filesFeature } from './http/files/files-feature.js';
import { shellsFeature } from './http/shells/shells-feature.js';

/** Longest capability lifetime the agent accepts (the broker's clamp is 15 min by default). */
const MAX_TOKEN_TTL_SECONDS = 3600;

const now = (): number => Date.now();

/** Where the key file is: named by the operator, or in the provider's state directory (D21). */
function keyFileOf(config: AgentConfig, stateDir: string | undefined): string | undefined {
  if (config.signingKey.kind === 'file') return config.signingKey.path;
  return stateDir === undefined ? undefined : path.join(stateDir, STATE_FILES.key);
}

function keySourceFor(config: AgentConfig, keyFile: string | undefined, read: OwnFileReader): KeySource {
  if (config.signingKey.kind === 'inline' || keyFile === undefined)
    return staticKeySource(config.signingKey.kind === 'inline' ? config.signingKey.base64url : '');
  return fileKeySource({ path: keyFile, graceMs: config.keyRotationGraceSeconds * 1000, now, read });
}

/** The provider writes `revocations.json` next to the key file (docs/security.md#revocation). */
function revocationsFor(keyFile: string | undefined, logger: Logger, read: OwnFileReader): RevocationList {
  if (keyFile === undefined) return emptyRevocationList();
  return fileRevocationList({
    read,
    path: path.join(path.dirname(keyFile), STATE_FILES.revocations),
    onError: (err) => logger.warn({ err }, 'revocation list not applied; the last good one stays'),
  });
}

/**
 * The agent holds no more privilege than the sandbox's own processes (docs/security.md):
 * the local provider starts it as the sandbox's user in the sandbox's view, the images as
 * an unprivileged user. Root here means a launch that skipped that: stop.
 */
function refuseRoot(): void {
  if (process.geteuid?.() === 0)
    throw new ConfigError('agent', [
      "the agent must not run as root: start it as the sandbox's unprivileged user (docs/security.md)",
    ]);
}

interface LaunchSetup {
  readonly launcher: Launcher;
  readonly namespace?: SandboxNamespace;
}

/** Under bubblewrap, the sandbox's namespaces exist before the first request can use them. */
async function launchSetup(
  config: AgentConfig,
  workspaceRoot: string,
  identity: AgentIdentity,
): Promise<LaunchSetup> {
  const launcher = config.launcher;
  if (launcher.kind === 'direct')
    return { launcher: directLauncher(identity.own === undefined ? {} : { user: identity.user }) };
  const namespace = await SandboxNamespace.start({
    bwrapPath: launcher.bwrapPath,
    slirp4netnsPath: launcher.slirp4netnsPath,
    workspaceRoot,
    network: launcher.network,
    // In the shared view the view itself covers them, for the agent and user code alike.
    hidePaths: launcher.sharedView ? [] : launcher.hidePaths,
    sharedView: launcher.sharedView,
  });
  return { launcher: bubblewrapLauncher(namespace), namespace };
}

/** What the file API keeps to the agent: its code in the shared view, the hidden paths otherwise. */
function privatePathsOf(config: AgentConfig): readonly string[] {
  const launcher = config.launcher;
  if (launcher.kind === 'direct') return [];
  return launcher.sharedView ? [AGENT_CODE_DIR] : launcher.hidePaths;
}

/** A sandbox whose namespaces are gone cannot run anything: end, so the broker sees the crash. */
function exitWhenNamespaceEnds(namespace: SandboxNamespace, logger: Logger, stopping: () => boolean): void {
  void namespace.exited.then(() => {
    if (stopping()) return false;
    logger.error('the sandbox namespace ended; the agent stops');
    logger.flush(() => process.exit(1));
    return true;
  });
}

function sandboxEnvOf(
  config: AgentConfig,
  stateDir: string | undefined,
  logger: Logger,
  read: OwnFileReader,
): SandboxEnvironment | undefined {
  const file =
    config.sandboxEnvFile ??
    (stateDir === undefined ? undefined : path.join(stateDir, STATE_FILES.environment));
  return file === undefined ? undefined : sandboxEnvironmentFile(file, logger, read);
}

function buildFeatures(ctx: AgentContext, config: AgentConfig): AgentFeature[] {
  const { legacyInterpreter, ...exec } = config.exec;
  const shells = config.shells;
  return [
    filesFeature(ctx, config.files),
    execFeature(ctx, {
      ...exec,
      legacyEndpoints: config.legacyEndpoints,
      ...(legacyInterpreter === undefined ? {} : { legacyInterpreter }),
    }),
    shellsFeature(ctx, {
      maxShells: shells.maxShells,
      idleGraceMs: shells.idleGraceMs,
      scrollbackBytes: shells.scrollbackBytes,
      legacyEndpoints: config.legacyEndpoints,
      ...(shells.shell === undefined ? {} : { program: { file: shells.shell, args: ['-l'] } }),
    }),
  ];
}

async function main(): Promise<void> {
  const config = loadAgentConfig();
  refuseRoot();
  const probe = process.argv.indexOf('--isolation-probe');
  if (probe !== -1) {
    await runIsolationProbe(config, process.argv.slice(probe + 1));
    process.exit(0);
  }
  const stateDir =
    config.signingKey.kind === 'state-fd' ? reopenStateDirectory(config.signingKey.fd) : undefined;
  // Before anything is spawned: no descriptor of whoever started the agent reaches user code.
  closeInheritedDescriptors();
  // libuv starts its thread pool on first use: now, before user code could exhaust the
  // sandbox's process limit (which counts the agent's threads too).
  await stat('/');
  const logger = createLogger({ service: 'agent', level: config.logLevel });
  mkdirSync(config.workspaceRoot, { recursive: true });
  const identity = currentIdentity();
  const readOwn = ownFileReader(identity);
  const keyFile = keyFileOf(config, stateDir);
  const keys = keySourceFor(config, keyFile, readOwn);
  const workspaceRoot = realpathSync(config.workspaceRoot);
  const setup = await launchSetup(config, workspaceRoot, identity);
  const metrics = createPromAgentMetrics(); // its own Registry, never prom-client's default
  const offline = createAuthenticator({
    keys,
    sandboxId: config.sandboxId,
    issuer: config.tokenIssuer,
    maxTtlSeconds: MAX_TOKEN_TTL_SECONDS,
    now,
    revocations: revocationsFor(keyFile, logger, readOwn),
    metrics,
  });
  const ctx: AgentContext = {
    sandboxId: config.sandboxId,
    workspace: new PathGuard(workspaceRoot, privatePathsOf(config)),
    logger,
    now,
    launcher: setup.launcher,
    keys,
    authenticator:
      config.introspectionUrl === undefined
        ? offline
        : createIntrospectingAuthenticator({
            url: config.introspectionUrl,
            keys,
            sandboxId: config.sandboxId,
            issuer: config.tokenIssuer,
            maxTtlSeconds: MAX_TOKEN_TTL_SECONDS,
            now,
            metrics,
            // The provider's readiness probe still signs a JWT with the sandbox's key.
            offline,
          }),
    metrics,
    metricsToken: config.metricsToken,
    sandboxEnv: sandboxEnvOf(config, stateDir, logger, readOwn),
  };
  const agent = await startAgentServer(ctx, buildFeatures(ctx, config), config);
  logger.info(
    { url: agent.httpUrl, sandbox_id: config.sandboxId, workspace: ctx.workspace.workspace },
    'agent listening',
  );
  let stopping = false;
  if (setup.namespace !== undefined) exitWhenNamespaceEnds(setup.namespace, logger, () => stopping);
  const stop = (signal: string): void => {
    stopping = true;
    logger.info({ signal }, 'agent stopping');
    void agent
      .close()
      .then(() => setup.namespace?.close())
      .then(() => logger.flush(() => process.exit(0)));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  // A refused configuration or key is a message for the operator, not a stack trace.
  process.stderr.write(`${err instanceof ConfigError || err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
