import type { RequestHandler } from 'express';
import type { SandboxInfo } from '@sbx/protocol';
import type { AgentContext } from '../agent-context.js';
import { AGENT_VERSION } from '../version.js';

/**
 * `GET /v1/info` (any token of this sandbox): where the workspace is for its processes,
 * so a client never guesses whether it is `/workspace` or a host path.
 */
export function infoHandler(ctx: AgentContext): RequestHandler {
  const info: SandboxInfo = {
    sandbox_id: ctx.sandboxId,
    workspace_path: ctx.workspace.workspace,
    home: ctx.workspace.workspace,
    version: AGENT_VERSION,
  };
  return (_req, res) => {
    res.set('Cache-Control', 'no-store');
    res.json(info);
  };
}
