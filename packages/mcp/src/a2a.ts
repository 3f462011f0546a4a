import { DEFAULT_WORKSPACE_PATH } from '@sbx/client';
import type { GetBindingResponse, MvpSessionResponse, SessionResponse } from '@sbx/protocol';

/**
 * A session as Agent2Agent (A2A) task environment metadata (docs/mcp.md#a2a-view): the
 * session answer becomes task metadata, the sandbox id the shared context reference
 * (`contextId`), and dataplane access resource URIs (file parts of one artifact). Shapes are
 * A2A's JSON ones (`Task.contextId`, `Task.metadata`, `Artifact`, `FilePart` with `file.uri`).
 *
 * The capability token is never included: another agent reaching the URIs negotiates its
 * own session with its own credentials.
 */

/** The key of the session under `Task.metadata`. */
export const A2A_ENVIRONMENT_KEY = 'sbx.environment';

export interface A2aFilePart {
  readonly kind: 'file';
  readonly file: { readonly uri: string; readonly name: string; readonly mimeType?: string };
  readonly metadata: {
    readonly rel: 'dataplane.http' | 'dataplane.ws' | 'workspace';
    readonly path?: string;
  };
}

export interface A2aArtifact {
  readonly artifactId: string;
  readonly name: string;
  readonly description: string;
  readonly parts: readonly A2aFilePart[];
}

export interface A2aEnvironmentMetadata {
  readonly session_id: string;
  readonly scope: { readonly type: string; readonly id: string };
  readonly sandbox_id: string;
  readonly provider: string;
  readonly workspace_path: string;
  /** Full answers only (an MVP answer has no lifecycle state or lease). */
  readonly state?: string;
  readonly lease_expires_at?: string;
  /** When the session's current token expires (absent for a GET, which mints none). */
  readonly expires_at?: string;
  readonly granted_capabilities?: readonly string[];
}

/** Merge into an A2A `Task`: `contextId`, `metadata` (under A2A_ENVIRONMENT_KEY) and `artifacts`. */
export interface A2aTaskEnvironment {
  readonly contextId: string;
  readonly metadata: { readonly [A2A_ENVIRONMENT_KEY]: A2aEnvironmentMetadata };
  readonly artifacts: readonly A2aArtifact[];
}

export type SessionAnswer = SessionResponse | GetBindingResponse | MvpSessionResponse;

/** The full answer's `dataplane`, else the MVP mirror, else `/workspace` (an older broker). */
const workspaceOf = (session: SessionAnswer): string =>
  ('dataplane' in session ? session.dataplane.workspace_path : undefined) ??
  session.sandbox.workspace_path ??
  DEFAULT_WORKSPACE_PATH;

const joinUrl = (base: string, tail: string): string => `${base.replace(/\/+$/, '')}/${tail}`;

function metadataOf(session: SessionAnswer): A2aEnvironmentMetadata {
  const { sandbox } = session;
  const common = {
    session_id: session.session_id,
    sandbox_id: sandbox.id,
    provider: sandbox.provider,
    workspace_path: workspaceOf(session),
  };
  const expiry = 'expires_at' in session ? { expires_at: session.expires_at } : {};
  if (!('binding' in session)) {
    return { ...common, scope: { type: 'thread', id: session.thread_id }, ...expiry };
  }
  const { binding } = session;
  return {
    ...common,
    scope: { type: binding.scope.type, id: binding.scope.id },
    state: binding.state,
    lease_expires_at: binding.lease_expires_at,
    ...expiry,
    ...('credentials' in session
      ? { granted_capabilities: [...session.credentials.granted_capabilities] }
      : {}),
  };
}

/** The A2A view of a session answer (`POST /v1/sandbox/sessions`, its GET, or the MVP shape). */
export function toA2aTaskEnvironment(session: SessionAnswer): A2aTaskEnvironment {
  const { sandbox } = session;
  const parts: A2aFilePart[] = [
    {
      kind: 'file',
      file: { uri: joinUrl(sandbox.http_base_url, 'files/'), name: 'workspace', mimeType: 'inode/directory' },
      metadata: { rel: 'workspace', path: workspaceOf(session) },
    },
    {
      kind: 'file',
      file: { uri: sandbox.http_base_url, name: 'dataplane-http' },
      metadata: { rel: 'dataplane.http' },
    },
    {
      kind: 'file',
      file: { uri: sandbox.ws_base_url, name: 'dataplane-ws' },
      metadata: { rel: 'dataplane.ws' },
    },
  ];
  return {
    contextId: sandbox.id,
    metadata: { [A2A_ENVIRONMENT_KEY]: metadataOf(session) },
    artifacts: [
      {
        artifactId: `sbx-environment-${session.session_id}`,
        name: 'sandbox environment',
        description: `Dataplane of sandbox ${sandbox.id}; a Bearer capability token from the broker is required.`,
        parts,
      },
    ],
  };
}
