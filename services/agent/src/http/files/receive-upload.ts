import type { Request, Response } from 'express';
import { SbxError } from '@sbx/protocol';
import { parseEtagCondition, etagOf, type WritePrecondition } from '../../domain/files/etag.js';
import { pathInfo } from '../../domain/files/file-operations.js';
import type { SandboxPath } from '../../domain/files/sandbox-path.js';
import type { FilesDeps } from './files-deps.js';

function declaredLength(req: Request): number | undefined {
  const header = req.get('content-length');
  if (header === undefined) return undefined;
  if (!/^\d{1,16}$/.test(header))
    throw new SbxError('BAD_REQUEST', 'Content-Length must be a whole number of bytes');
  return Number(header);
}

function preconditionOf(req: Request): WritePrecondition {
  return {
    ifMatch: parseEtagCondition(req.get('if-match')),
    ifNoneMatch: parseEtagCondition(req.get('if-none-match')),
  };
}

/**
 * The request body, chunk by chunk. The iterator must not destroy the request when the
 * writer stops early (too large, disk full): that would reset the connection before the
 * error response could be sent.
 */
async function* requestBody(req: Request): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of req.iterator({ destroyOnReturn: false })) {
      yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    }
  } catch (err) {
    throw new SbxError('BAD_REQUEST', 'the upload ended before its body was complete; nothing was changed', {
      cause: err,
    });
  }
}

/**
 * PUT /files/{path} and POST /v1/files/upload: the body becomes the file, atomically.
 * 201 when it was created, 200 when it replaced one; both carry the new ETag.
 */
export async function receiveUpload(
  deps: FilesDeps,
  req: Request,
  res: Response,
  target: SandboxPath,
): Promise<void> {
  const limit = deps.settings.maxUploadBytes;
  try {
    const declared = declaredLength(req);
    if (declared !== undefined && declared > limit) {
      throw new SbxError(
        'PAYLOAD_TOO_LARGE',
        `upload of ${declared} bytes is larger than ${limit} bytes; nothing was changed`,
        {
          details: { max_bytes: limit },
        },
      );
    }
    const precondition = preconditionOf(req);
    const resolved = await deps.guard.resolveWriteTarget(target, true);
    const result = await deps.writer.write({
      target: resolved,
      body: requestBody(req),
      maxBytes: limit,
      precondition,
    });
    // Counted once the file is in place: a refused or broken upload wrote nothing.
    deps.bytes.in.add(Number(result.stats.size));
    res
      .status(result.created ? 201 : 200)
      .setHeader('ETag', etagOf(result.stats))
      .setHeader('Last-Modified', result.stats.mtime.toUTCString())
      .json(pathInfo(target, result.stats));
  } catch (err) {
    // A client still sending would get EPIPE instead of the answer: read off a bounded rest
    // first; past the bound, answer and drop the connection.
    if (!req.complete) await drainBody(req, DRAIN_MAX_BYTES, DRAIN_MAX_MS);
    if (!req.complete) res.setHeader('Connection', 'close');
    throw err;
  }
}

const DRAIN_MAX_BYTES = 32 * 1024 * 1024;
const DRAIN_MAX_MS = 2_000;

function drainBody(req: Request, maxBytes: number, maxMs: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const done = (): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', done);
      req.off('close', done);
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      seen += chunk.length;
      if (seen > maxBytes) {
        req.pause();
        done();
      }
    };
    const timer = setTimeout(done, maxMs);
    req.on('data', onData);
    req.once('end', done);
    req.once('close', done);
    req.resume();
  });
}
