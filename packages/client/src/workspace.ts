import type { GetBindingResponse, SessionResponse, ThreadSandboxResponse } from '@sbx/protocol';

/**
 * Where a sandbox's processes see their workspace when the broker does not say: servers
 * older than `workspace_path` in their answers confine every sandbox at `/workspace`.
 */
export const DEFAULT_WORKSPACE_PATH = '/workspace';

/**
 * The workspace of a negotiated sandbox as its processes (and the files API) see it: the
 * full protocol's `dataplane.workspace_path`, else the MVP mirror's `sandbox.workspace_path`,
 * else the thread route's `workspace_path`, else `/workspace` (an older server). With
 * `LOCAL_ISOLATION=none` it is the workspace's host path.
 */
export function workspacePathOf(
  answer:
    | Pick<SessionResponse, 'dataplane' | 'sandbox'>
    | Pick<GetBindingResponse, 'dataplane' | 'sandbox'>
    | Pick<ThreadSandboxResponse, 'workspace_path'>,
): string {
  if ('dataplane' in answer) {
    return answer.dataplane.workspace_path ?? answer.sandbox.workspace_path ?? DEFAULT_WORKSPACE_PATH;
  }
  return answer.workspace_path ?? DEFAULT_WORKSPACE_PATH;
}
