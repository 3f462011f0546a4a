import express from 'express';
import type { AgentContext, AgentFeature } from '../../agent-context.js';
import { CommandLog } from '../../domain/commands/command-log.js';
import { ProcessSlots } from '../../domain/exec/process-slots.js';
import { ProcessSupervisor } from '../../domain/exec/process-supervisor.js';
import { ProcessRegistry } from '../../domain/processes/process-registry.js';
import { execWsRoute } from './exec-ws-route.js';
import { mountCodeRoute } from './code-route.js';
import { mountCommandLogRoute } from './command-log-route.js';
import { mountExecRoute } from './exec-route.js';
import { resolveExecOptions, type ExecOptions } from './exec-options.js';
import { legacyExecuteRoute } from './legacy-execute-route.js';
import { mountProcessOutputRoute } from './process-output-route.js';
import { mountProcessRoutes } from './process-routes.js';

export type { ExecOptions } from './exec-options.js';

/**
 * Exec and processes (scope `process`): `POST /v1/exec`, `/v1/processes…`,
 * `WS /v1/exec/ws`, and the legacy `WS /execute` when enabled. Every program starts
 * through the context's launcher, in its own process group, with an environment
 * built from scratch.
 */
export function execFeature(ctx: AgentContext, options: ExecOptions = {}): AgentFeature {
  const settings = resolveExecOptions(options);
  const supervisor = new ProcessSupervisor({
    workspace: ctx.workspace,
    launcher: ctx.launcher,
    sandboxEnv: ctx.sandboxEnv,
    slots: new ProcessSlots(settings.maxConcurrentProcesses),
    drainMs: settings.drainMs,
    maxPendingStdinBytes: settings.maxPendingStdinBytes,
  });
  const registry = new ProcessRegistry({
    supervisor,
    now: ctx.now,
    outputBufferBytes: settings.outputBufferBytes,
    retentionMs: settings.processRetentionMs,
    maxRetained: settings.maxRetainedProcesses,
  });
  const commandLog = new CommandLog({ capacity: settings.commandLogSize, now: ctx.now });
  const router = express.Router();
  mountExecRoute(router, { supervisor, options: settings, now: ctx.now, commandLog });
  mountCodeRoute(router, { supervisor, options: settings, now: ctx.now, commandLog });
  mountProcessRoutes(router, { registry, options: settings, logger: ctx.logger, commandLog });
  mountProcessOutputRoute(router, { registry, followBufferBytes: settings.followBufferBytes });
  mountCommandLogRoute(router, commandLog);
  const streamDeps = { supervisor, killGraceMs: settings.killGraceMs, commandLog };
  const wsRoutes = [execWsRoute({ ...streamDeps, defaultTimeoutMs: settings.defaultTimeoutMs })];
  if (settings.legacyEndpoints)
    wsRoutes.push(
      legacyExecuteRoute({
        ...streamDeps,
        interpreter: settings.legacyInterpreter,
        timeoutMs: settings.defaultTimeoutMs,
        logger: ctx.logger,
      }),
    );
  return {
    name: 'exec',
    router,
    wsRoutes,
    stats: () => ({ processes: registry.runningCount }),
    report: () => registry.report(),
    close: async () => {
      registry.close();
      await supervisor.closeAll();
    },
  };
}
