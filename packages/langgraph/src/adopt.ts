import { RefreshingCredentials, SandboxClient, workspacePathOf, type BrokerClient } from '@sbx/client';
import type { MvpSessionResponse } from '@sbx/protocol';
import type { ThreadSandbox } from './sessions.js';

/**
 * A session negotiated before the run (`configurable.sandbox`, the MVP session response),
 * used as is: no `ensure`. Refreshing its token needs the broker, asked only when the token
 * nears expiry; without one the token is used until it expires.
 */
export function adoptSession(session: MvpSessionResponse, broker: () => BrokerClient): ThreadSandbox {
  const credentials = new RefreshingCredentials({
    initial: { token: session.token, expiresAt: new Date(session.expires_at) },
    refresh: async () => {
      const fresh = await broker().refresh(session.session_id);
      return { token: fresh.access_token, expiresAt: new Date(fresh.expires_at) };
    },
  });
  const client = new SandboxClient({
    httpBaseUrl: session.sandbox.http_base_url,
    wsBaseUrl: session.sandbox.ws_base_url,
    tokens: credentials,
  });
  return {
    threadId: session.thread_id ?? session.session_id,
    sessionId: session.session_id,
    sandboxId: session.sandbox.id,
    workspacePath: workspacePathOf({ workspace_path: session.sandbox.workspace_path }),
    client,
    // Its lease is its owner's to keep; nothing to check here.
    beforeUse: async () => true,
    noteFailure: () => undefined,
    release: async () => credentials.close(),
  };
}
