import type { Request, RequestHandler, Response } from 'express';
import { SbxError } from '@sbx/protocol';
import { requireScope, verifyFileUrl, type FileUrlOperation } from '@sbx/tokens';
import type { SandboxPath } from '../../domain/files/sandbox-path.js';
import { capabilityOf } from '../capability.js';
import type { FilesDeps } from './files-deps.js';

/** Signed URLs grant `GET` (read) or `PUT` (write); bearer tokens need the matching scope. */
const SCOPE_OF_OPERATION = { GET: 'fs:ro', PUT: 'fs:rw' } as const satisfies Record<FileUrlOperation, string>;

/** The app skips bearer authentication exactly when this is true, so the check must mirror it. */
export function isSignedRequest(req: Request): boolean {
  return typeof req.query['sig'] === 'string';
}

/**
 * Authorizes one file read or write, by a signed URL (bound to this sandbox, the
 * operation, the path and an expiry, checked against every current key) or by the
 * bearer token's scope. The bearer scope is checked before the path is even parsed.
 */
export function authorizeFileAccess(
  deps: FilesDeps,
  req: Request,
  res: Response,
  operation: FileUrlOperation,
  pathOf: (req: Request) => SandboxPath,
): SandboxPath {
  if (!isSignedRequest(req)) {
    requireScope(capabilityOf(res), SCOPE_OF_OPERATION[operation]);
    return pathOf(req);
  }
  const target = signedPathOf(req, pathOf);
  verifyFileUrl({
    keys: deps.ctx.keys.current().keys,
    sandboxId: deps.ctx.sandboxId,
    op: operation,
    path: target.display,
    sig: req.query['sig'],
    exp: req.query['exp'],
    now: deps.ctx.now,
    maxTtlSeconds: deps.settings.signedUrlMaxTtlSeconds,
  });
  return target;
}

/**
 * The path of a signed request, or 401: no signature can be valid for a path the agent
 * refuses, and the refusal would tell an unauthenticated caller where the workspace is.
 */
function signedPathOf(req: Request, pathOf: (req: Request) => SandboxPath): SandboxPath {
  try {
    return pathOf(req);
  } catch (err) {
    if (err instanceof SbxError && err.code === 'FORBIDDEN')
      throw new SbxError('UNAUTHENTICATED', 'the signed URL is not valid for this path');
    throw err;
  }
}

/** On every route that does not take signed URLs: a `sig` there must not pass as authentication. */
export const refuseSignedUrl: RequestHandler = (req, _res, next) => {
  if (isSignedRequest(req)) {
    throw new SbxError(
      'UNAUTHENTICATED',
      'signed URLs are accepted only for file download and upload; use Authorization: Bearer <token>',
    );
  }
  next();
};
