import { sandboxEnvironmentFile } from './adapters/sandbox-env-file.js';
import { realpathSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  closeInheritedDescriptors,
  ConfigError,
  createLogger,
  SANDBOX_WORKSPACE,
  SandboxNamespace,
  type Logger,
} from '@sbx/service-kit';
import { loadAgentConfig, type AgentConfig } from './config.js';
import { fileKeySource, staticKeySource, type KeySource } from './adapters/key-source.js';
import { joinCgroups } from './adapters/cgroup-join.js';
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

function keySourceFor(config: AgentConfig): KeySource {
  if (config.signingKey.kind === 'inline') return staticKeySource(config.signingKey.base64url);
  return fileKeySource({ path: config.signingKey.path, graceMs: config.keyRotationGraceSeconds * 1000, now });
}

/** The provider writes `revocations.json` next to the key file (docs/security.md#revocation). */
function revocationsFor(config: AgentConfig, logger: Logger): RevocationList {
  if (config.signingKey.kind === 'inline') return emptyRevocationList();
  return fileRevocationList({
    path: path.join(path.dirname(config.signingKey.path), 'revocations.json'),
    onError: (err) => logger.warn({ err }, 'revocation list not applied; the last good one stays'),
  });
}

interface LaunchSetup {
  readonly launcher: Launcher;
  readonly namespace?: SandboxNamespace;
}

/** Under bubblewrap, the sandbox's namespaces exist before the first request can use them. */
async function launchSetup(config: AgentConfig, workspaceRoot: string): Promise<LaunchSetup> {
  const launcher = config.launcher;
  if (launcher.kind === 'direct')
    return { launcher: directLauncher(launcher.runAs === undefined ? {} : { runAs: launcher.runAs }) };
  if (process.getuid?.() === 0 && launcher.runAs === undefined)
    throw new ConfigError('agent', [
      'AGENT_RUN_AS_UID: required with AGENT_LAUNCHER=bubblewrap when the agent runs as root (user code must not be root)',
    ]);
  const namespace = await SandboxNamespace.start({
    bwrapPath: launcher.bwrapPath,
    slirp4netnsPath: launcher.slirp4netnsPath,
    workspaceRoot,
    network: launcher.network,
    hidePaths: launcher.hidePaths,
    ...(launcher.runAs === undefined ? {} : { runAs: launcher.runAs }),
  });
  return { launcher: bubblewrapLauncher(namespace), namespace };
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
  // Before anything is spawned: no descriptor of whoever started the agent reaches user code.
  closeInheritedDescriptors();
  const config = loadAgentConfig();
  const logger = createLogger({ service: 'agent', level: config.logLevel });
  joinCgroups(config.cgroups);
  mkdirSync(config.workspaceRoot, { recursive: true });
  const keys = keySourceFor(config);
  const workspaceRoot = realpathSync(config.workspaceRoot);
  const setup = await launchSetup(config, workspaceRoot);
  const metrics = createPromAgentMetrics(); // its own Registry, never prom-client's default
  const offline = createAuthenticator({
    keys,
    sandboxId: config.sandboxId,
    issuer: config.tokenIssuer,
    maxTtlSeconds: MAX_TOKEN_TTL_SECONDS,
    now,
    revocations: revocationsFor(config, logger),
    metrics,
  });
  const ctx: AgentContext = {
    sandboxId: config.sandboxId,
    // Confined processes see the workspace at SANDBOX_WORKSPACE; unconfined ones at its host path.
    workspace: new PathGuard(
      workspaceRoot,
      setup.namespace === undefined ? workspaceRoot : SANDBOX_WORKSPACE,
    ),
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
    sandboxEnv:
      config.sandboxEnvFile === undefined ? undefined : sandboxEnvironmentFile(config.sandboxEnvFile, logger),
  };
  const agent = await startAgentServer(ctx, buildFeatures(ctx, config), config);
  logger.info(
    { url: agent.httpUrl, sandbox_id: config.sandboxId, workspace: ctx.workspace.sandboxRoot },
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
