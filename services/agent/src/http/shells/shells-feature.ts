import type { AgentShell } from '@sbx/protocol';
import type { AgentContext, AgentFeature } from '../../agent-context.js';
import { nodePtySpawner, type PtySpawner } from '../../adapters/pty.js';
import { defaultShellProgram } from '../../domain/shells/shell-launch.js';
import {
  resolveShellLimits,
  type ResolvedShellLimits,
  type ShellLimits,
} from '../../domain/shells/shell-limits.js';
import { ShellRegistry, type NewShell, type ShellRegistryDeps } from '../../domain/shells/shell-registry.js';
import type { ShellSession } from '../../domain/shells/shell-session.js';
import type { WsRoute } from '../ws/ws-session.js';
import { legacyComputerRoute } from './legacy-computer-endpoint.js';
import { shellRoute } from './shell-endpoint.js';

export interface ShellOptions extends ShellLimits {
  /**
   * Serve the legacy `WS /computer?token=&room=&elevated=` (docs/protocol.md#legacy-endpoints);
   * default off.
   */
  readonly legacyEndpoints?: boolean;
  /** The PTY implementation; node-pty unless a test or another platform swaps it. */
  readonly spawnPty?: PtySpawner;
}

/** The registry, remembering when each shell opened, to list the running ones in /healthz. */
class ReportingShellRegistry extends ShellRegistry {
  readonly #openedAt = new Map<ShellSession, Date>();

  constructor(
    deps: ShellRegistryDeps,
    limits: ResolvedShellLimits,
    private readonly now: () => number,
  ) {
    super(deps, limits);
  }

  override async create(request: NewShell): Promise<ShellSession> {
    const session = await super.create(request);
    this.#openedAt.set(session, new Date(this.now()));
    void session.whenExited.then(() => this.#openedAt.delete(session));
    return session;
  }

  openShells(): AgentShell[] {
    return [...this.#openedAt.entries()]
      .filter(([session]) => session.exit === undefined)
      .map(([session, openedAt]) => ({ id: session.id, opened_at: openedAt.toISOString() }));
  }

  override async closeAll(): Promise<void> {
    await super.closeAll();
    this.#openedAt.clear();
  }
}

/** Interactive PTY shells over WebSockets: persistent, shareable, flow-controlled. */
export function shellsFeature(ctx: AgentContext, options: ShellOptions = {}): AgentFeature {
  const registry = new ReportingShellRegistry(
    {
      workspace: ctx.workspace,
      launcher: ctx.launcher,
      spawnPty: options.spawnPty ?? nodePtySpawner,
      logger: ctx.logger,
      sandboxEnv: ctx.sandboxEnv,
    },
    resolveShellLimits(options, defaultShellProgram),
    ctx.now,
  );
  const wsRoutes: WsRoute[] = [shellRoute(registry)];
  if (options.legacyEndpoints === true) wsRoutes.push(legacyComputerRoute(registry, ctx.logger));
  return {
    name: 'shells',
    wsRoutes,
    stats: () => ({ shells: registry.runningCount }),
    report: () => ({ shells: registry.openShells() }),
    close: () => registry.closeAll(),
  };
}
