import type { AgentContext, AgentFeature } from '../../agent-context.js';
import { nodePtySpawner, type PtySpawner } from '../../adapters/pty.js';
import { defaultShellProgram } from '../../domain/shells/shell-launch.js';
import { resolveShellLimits, type ShellLimits } from '../../domain/shells/shell-limits.js';
import { ShellRegistry } from '../../domain/shells/shell-registry.js';
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

/** Interactive PTY shells over WebSockets: persistent, shareable, flow-controlled. */
export function shellsFeature(ctx: AgentContext, options: ShellOptions = {}): AgentFeature {
  const registry = new ShellRegistry(
    {
      workspace: ctx.workspace,
      launcher: ctx.launcher,
      spawnPty: options.spawnPty ?? nodePtySpawner,
      logger: ctx.logger,
    },
    resolveShellLimits(options, defaultShellProgram),
  );
  const wsRoutes: WsRoute[] = [shellRoute(registry)];
  if (options.legacyEndpoints === true) wsRoutes.push(legacyComputerRoute(registry, ctx.logger));
  return {
    name: 'shells',
    wsRoutes,
    stats: () => ({ shells: registry.runningCount }),
    close: () => registry.closeAll(),
  };
}
