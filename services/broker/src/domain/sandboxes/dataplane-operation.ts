// What a data-plane call through `/v1/sandboxes/{id}/dp/…` needs (docs/sandboxes.md "Relay
// mode"): the agent capability that carries it and the caller scope that grants it. The
// operation decides, never the HTTP method alone: a PTY is attach:sandbox, and running a
// program is exec:sandbox, which does not imply it.
import type { CallerScope, CapabilityScope } from '@sbx/protocol';

export interface DataplaneOperation {
  readonly capability: CapabilityScope;
  readonly callerScope: CallerScope;
}

const READ: DataplaneOperation = { capability: 'fs:ro', callerScope: 'read:sandbox' };
const WRITE: DataplaneOperation = { capability: 'fs:rw', callerScope: 'write:sandbox' };
const EXEC: DataplaneOperation = { capability: 'process', callerScope: 'exec:sandbox' };
const ATTACH: DataplaneOperation = { capability: 'shell', callerScope: 'attach:sandbox' };

const READ_METHODS = new Set(['GET', 'HEAD']);
const READ_FILE_ROUTES = new Set([
  '/v1/files/download',
  '/v1/files/stat',
  '/v1/files/list',
  '/v1/files/watch',
]);

/** The operation of `method agentPath` (no query), or undefined for a path the relay does not carry. */
export function dataplaneOperation(method: string, agentPath: string): DataplaneOperation | undefined {
  if (agentPath === '/v1/shell/ws' || agentPath === '/ws' || agentPath === '/computer') return ATTACH;
  if (
    agentPath === '/v1/exec' ||
    agentPath === '/v1/exec/ws' ||
    agentPath === '/v1/code' ||
    agentPath === '/execute' ||
    agentPath === '/v1/processes' ||
    agentPath.startsWith('/v1/processes/')
  )
    return EXEC;
  if (agentPath === '/v1/info' || agentPath === '/v1/commands/log') return READ;
  if (READ_FILE_ROUTES.has(agentPath)) return READ;
  if (agentPath.startsWith('/v1/files/') || agentPath === '/v1/files') return WRITE;
  if (agentPath === '/files' || agentPath.startsWith('/files/'))
    return READ_METHODS.has(method) ? READ : WRITE;
  return undefined;
}
