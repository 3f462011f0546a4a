import type { Request } from 'express';
import { SbxError } from '@sbx/protocol';
import type { PathGuard } from '../../domain/files/path-guard.js';
import type { SandboxPath } from '../../domain/files/sandbox-path.js';

const FILES_PREFIX_LENGTH = '/files'.length;

/**
 * The workspace path of `/files/{path}`, relative to the workspace. `req.path` is still
 * percent-encoded (Express decodes only route parameters), so each segment is decoded
 * exactly once here and an encoded separator cannot hide inside one. `/files` and
 * `/files/` are the workspace root.
 */
export function pathFromFilesUrl(guard: PathGuard, req: Request): SandboxPath {
  return guard.parseUrlTail(req.path.slice(FILES_PREFIX_LENGTH));
}

/** A required query parameter holding a sandbox path (already decoded once by the query parser). */
export function pathFromQuery(guard: PathGuard, req: Request, name = 'path'): SandboxPath {
  const value = req.query[name];
  if (typeof value !== 'string' || value === '') {
    throw new SbxError('BAD_REQUEST', `query parameter "${name}" is required, once`);
  }
  return guard.parse(value);
}

/** `?name=true|false`; absent: false. */
export function booleanQuery(req: Request, name: string): boolean {
  const value = req.query[name];
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new SbxError('BAD_REQUEST', `query parameter "${name}" must be true or false`);
}
