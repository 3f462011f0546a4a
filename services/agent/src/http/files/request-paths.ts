import type { Request } from 'express';
import { SbxError } from '@sbx/protocol';
import {
  parseEncodedPath,
  parseWorkspacePath,
  type WorkspacePath,
} from '../../domain/files/workspace-path.js';

const FILES_PREFIX_LENGTH = '/files'.length;

/**
 * The workspace path of `/files/{path}`. `req.path` is still percent-encoded (Express
 * decodes only route parameters), so each segment is decoded exactly once here and an
 * encoded separator cannot hide inside one. `/files` and `/files/` are the root.
 */
export function pathFromFilesUrl(req: Request): WorkspacePath {
  return parseEncodedPath(req.path.slice(FILES_PREFIX_LENGTH));
}

/** A required query parameter holding a workspace path (already decoded once by the query parser). */
export function pathFromQuery(req: Request, name = 'path'): WorkspacePath {
  const value = req.query[name];
  if (typeof value !== 'string' || value === '') {
    throw new SbxError('BAD_REQUEST', `query parameter "${name}" is required, once`);
  }
  return parseWorkspacePath(value);
}

/** `?name=true|false`; absent: false. */
export function booleanQuery(req: Request, name: string): boolean {
  const value = req.query[name];
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new SbxError('BAD_REQUEST', `query parameter "${name}" must be true or false`);
}
