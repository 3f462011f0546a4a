import express, { Router, type Request, type Response } from 'express';
import { parseOrThrow, MkdirRequest, MoveRequest } from '@sbx/protocol';
import { jsonBodyOf } from '@sbx/service-kit';
import { listPath } from '../../domain/files/directory-listing.js';
import { makeDirectory, movePath, removePath, statPath } from '../../domain/files/file-operations.js';
import type { SandboxPath } from '../../domain/files/sandbox-path.js';
import { requireCapability } from '../capability.js';
import { authorizeFileAccess, refuseSignedUrl } from './file-access.js';
import type { FilesDeps } from './files-deps.js';
import { receiveUpload } from './receive-upload.js';
import { booleanQuery, pathFromFilesUrl, pathFromQuery } from './request-paths.js';
import { serveFile } from './serve-file.js';

const FILE_ROUTES = ['/files', '/files/*path'];
const jsonBody = express.json({ limit: '64kb' });
const readScope = [refuseSignedUrl, requireCapability('fs:ro')];
const writeScope = [refuseSignedUrl, requireCapability('fs:rw')];

/**
 * The files API (docs/protocol.md#files). The `/files/{path}` routes (GET, HEAD, PUT, DELETE)
 * and the normalized `/v1/files/*` routes share one implementation. Scopes are per operation: reading,
 * listing and stat need `fs:ro`; writing, mkdir, move and delete need `fs:rw` (which
 * implies `fs:ro`). Only download and upload also accept a signed URL instead.
 */
export function filesRouter(deps: FilesDeps): Router {
  const router = Router();
  const { guard } = deps;
  const fromUrl = (req: Request): SandboxPath => pathFromFilesUrl(guard, req);
  const fromQuery = (req: Request): SandboxPath => pathFromQuery(guard, req);
  router.get(FILE_ROUTES, async (req: Request, res: Response) => {
    await serveFile(deps, req, res, authorizeFileAccess(deps, req, res, 'GET', fromUrl));
  });
  router.put(FILE_ROUTES, async (req: Request, res: Response) => {
    await receiveUpload(deps, req, res, authorizeFileAccess(deps, req, res, 'PUT', fromUrl));
  });
  router.delete(FILE_ROUTES, writeScope, async (req: Request, res: Response) => {
    await removePath(guard, fromUrl(req), booleanQuery(req, 'recursive'));
    res.status(204).end();
  });

  router.get('/v1/files/download', async (req: Request, res: Response) => {
    await serveFile(deps, req, res, authorizeFileAccess(deps, req, res, 'GET', fromQuery));
  });
  router.post('/v1/files/upload', async (req: Request, res: Response) => {
    await receiveUpload(deps, req, res, authorizeFileAccess(deps, req, res, 'PUT', fromQuery));
  });
  router.get('/v1/files/stat', readScope, async (req: Request, res: Response) => {
    res.json(await statPath(guard, fromQuery(req)));
  });
  router.get('/v1/files/list', readScope, async (req: Request, res: Response) => {
    res.json(await listPath(guard, fromQuery(req)));
  });
  router.post('/v1/files/mkdir', writeScope, jsonBody, async (req: Request, res: Response) => {
    const body = parseOrThrow(MkdirRequest, jsonBodyOf(req));
    const made = await makeDirectory(guard, guard.parse(body.path), body.parents ?? false);
    res.status(made.created ? 201 : 200).json(made.info);
  });
  router.post('/v1/files/move', writeScope, jsonBody, async (req: Request, res: Response) => {
    const body = parseOrThrow(MoveRequest, jsonBodyOf(req));
    const from = guard.parse(body.from);
    res.json(await movePath(guard, from, guard.parse(body.to), body.overwrite ?? false));
  });
  router.delete('/v1/files', writeScope, async (req: Request, res: Response) => {
    await removePath(guard, fromQuery(req), booleanQuery(req, 'recursive'));
    res.status(204).end();
  });

  // The app lets any request carrying `sig` past bearer authentication; none may go further unverified.
  router.use(refuseSignedUrl);
  return router;
}
