import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { BrokerSession } from '@sbx/client';
import { z } from 'zod';
import type { CallerEnvironments } from './environments.js';
import { guarded, toolResult } from './results.js';

const threadId = z.string().min(1).max(200).describe('The thread (conversation) whose sandbox this is');
const optionalThread = threadId
  .optional()
  .describe('The thread; default: the environment acquired last by this caller');

/** What a caller learns of a session: never its capability token (the server holds that). */
export function environmentView(session: BrokerSession): Record<string, unknown> {
  const { response } = session;
  return {
    session_id: response.session_id,
    thread_id: response.binding.scope.id,
    sandbox_id: response.binding.sandbox_id,
    provider: response.binding.provider,
    state: response.binding.state,
    lease_expires_at: response.binding.lease_expires_at,
    workspace_path: session.workspacePath,
    expires_at: session.credentials.current().expiresAt.toISOString(),
    granted_capabilities: response.credentials.granted_capabilities,
    policy: response.policy,
  };
}

/**
 * The session protocol's lifecycle as MCP tools (docs/mcp.md): negotiate
 * (`POST /v1/sandbox/sessions`), refresh the token, heartbeat the lease, release.
 */
export function registerEnvironmentTools(
  server: McpServer,
  environments: CallerEnvironments,
  onInternal?: (err: unknown) => void,
): void {
  server.registerTool(
    'environment_acquire',
    {
      title: 'Acquire a sandbox environment',
      description:
        "Attach to the thread's sandbox (mode ensure: create it when there is none; get: existing only). " +
        'Later file and command tools use it. Returns the session, never its token.',
      inputSchema: {
        thread_id: threadId,
        mode: z.enum(['ensure', 'get']).default('ensure'),
        capabilities: z
          .array(z.string().min(1))
          .min(1)
          .optional()
          .describe('Requested capabilities (fs:ro, fs:rw, process, …); default: the agent policy'),
      },
    },
    ({ thread_id, mode, capabilities }) =>
      guarded(async () => {
        const session = await environments.acquire(thread_id, mode, capabilities);
        return toolResult(environmentView(session));
      }, onInternal),
  );

  server.registerTool(
    'environment_refresh',
    {
      title: 'Refresh the capability token',
      description: "Mint a new short-lived token for the thread's session (the server keeps it).",
      inputSchema: { thread_id: optionalThread },
    },
    ({ thread_id }) =>
      guarded(async () => {
        const session = await environments.session(thread_id);
        const credential = await session.credentials.refresh();
        return toolResult({
          session_id: session.sessionId,
          thread_id: session.response.binding.scope.id,
          expires_at: credential.expiresAt.toISOString(),
        });
      }, onInternal),
  );

  server.registerTool(
    'environment_heartbeat',
    {
      title: 'Extend the lease',
      description: "Keep the thread's sandbox alive (resumes an idle or suspended one).",
      inputSchema: { thread_id: optionalThread },
    },
    ({ thread_id }) =>
      guarded(async () => {
        const session = await environments.session(thread_id);
        const beat = await session.heartbeat();
        return toolResult({
          session_id: session.sessionId,
          thread_id: session.response.binding.scope.id,
          lease_expires_at: beat.lease_expires_at,
          state: beat.state,
        });
      }, onInternal),
  );

  server.registerTool(
    'environment_release',
    {
      title: 'Release the environment',
      description:
        "Release this caller's binding on the thread's sandbox (the last binding ends the sandbox).",
      inputSchema: { thread_id: optionalThread },
      annotations: { destructiveHint: true },
    },
    ({ thread_id }) =>
      guarded(async () => {
        const session = await environments.release(thread_id);
        return toolResult({
          session_id: session.sessionId,
          thread_id: session.response.binding.scope.id,
          released: true,
        });
      }, onInternal),
  );
}
