// What a data-plane call through `/v1/sandboxes/{id}/dp/…` needs (docs/sandboxes.md "Relay
// mode"): the agent capability that carries it and the caller scope that grants it. The
// operation decides, never the HTTP method alone: a PTY is attach:sandbox, and running a
// program is exec:sandbox, which does not imply it.
import { SbxError, type CallerScope, type CapabilityScope } from '@sbx/protocol';

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

/**
 * A dot, slash or backslash percent-encoded once or more (`%2e`, `%252E`, `%2f`, `%5c` …), or a
 * literal backslash: what a URL parser or the agent may turn into a path segment of its own.
 */
const HIDDEN_SEGMENT = /%(?:25)*(?:2e|2f|5c)|\\/i;

/**
 * The agent path (no query, starting with `/`) of a relayed call as written, `/files/a/../b`, to the
 * one path both the scope check and the forwarded request use: dot segments resolved as the
 * relay's URL (and so the agent) would resolve them. 400 when one hides behind encoding.
 */
export function dataplanePath(written: string): string {
  if (HIDDEN_SEGMENT.test(written))
    throw new SbxError(
      'BAD_REQUEST',
      'the data-plane path must not contain "\\" nor an encoded ".", "/" or "\\"',
    );
  // Appended to an origin, as the relay joins it: a leading `//` stays a path, never a host.
  return new URL(`http://relay.invalid${written}`).pathname;
}

/** The operation of `method agentPath` (no query; see dataplanePath), or undefined for a path the relay does not carry. */
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
