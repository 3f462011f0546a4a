import type { BigIntStats } from 'node:fs';
import type { Request, Response } from 'express';
import { SbxError } from '@sbx/protocol';
import { parseByteRange, type ByteRange } from '../../domain/files/byte-range.js';
import { listDirectory } from '../../domain/files/directory-listing.js';
import { describeSpecial } from '../../domain/files/entry-info.js';
import { etagOf, parseEtagCondition, weakMatch } from '../../domain/files/etag.js';
import { openRegularFile, type OpenedFile } from '../../domain/files/safe-open.js';
import type { SandboxPath } from '../../domain/files/sandbox-path.js';
import { contentTypeOf } from './content-type.js';
import { sendFileBody } from './file-body.js';
import type { FilesDeps } from './files-deps.js';

/** `If-Range` other than our current ETag (including any date) means: the whole file, fresh. */
function requestedRange(req: Request, size: number, etag: string): ByteRange | undefined {
  const ifRange = req.get('if-range');
  if (ifRange !== undefined && ifRange !== etag) return undefined;
  return parseByteRange(req.get('range'), size);
}

function setFileHeaders(res: Response, stats: BigIntStats, name: string): void {
  res.setHeader('ETag', etagOf(stats));
  res.setHeader('Last-Modified', stats.mtime.toUTCString());
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('Content-Type', contentTypeOf(name));
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // Served from the agent's origin, an HTML or SVG file must not run scripts there.
  res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
}

/** Answers from an open file: 304, 416, HEAD, or a (partial) body streamed from disk. */
async function sendFile(
  deps: FilesDeps,
  req: Request,
  res: Response,
  file: OpenedFile,
  target: SandboxPath,
): Promise<void> {
  const size = Number(file.stats.size);
  const etag = etagOf(file.stats);
  const ifNoneMatch = parseEtagCondition(req.get('if-none-match'));
  let range: ByteRange | undefined;
  try {
    range = requestedRange(req, size, etag);
  } catch (err) {
    // RFC 9110 §15.5.17: a 416 names the current length.
    res.setHeader('Content-Range', `bytes */${size}`);
    throw err;
  }
  setFileHeaders(res, file.stats, target.segments.at(-1) ?? '');
  if (ifNoneMatch !== undefined && weakMatch(ifNoneMatch, etag)) {
    res.status(304).end();
    return;
  }
  if (range !== undefined) {
    res.status(206).setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
  }
  const length = range === undefined ? size : range.end - range.start + 1;
  res.setHeader('Content-Length', String(length));
  if (req.method === 'HEAD' || length === 0) {
    res.end();
    return;
  }
  await sendFileBody(res, file.handle, range?.start ?? 0, range?.end ?? size - 1, deps.bytes.out);
}

/**
 * GET/HEAD on a path: a directory is answered with its JSON listing; a regular file
 * is streamed (never read into memory) with validators and byte ranges; FIFOs,
 * sockets and devices are refused before they are opened.
 */
export async function serveFile(
  deps: FilesDeps,
  req: Request,
  res: Response,
  target: SandboxPath,
): Promise<void> {
  const resolved = await deps.guard.resolveExisting(target);
  if (resolved.stats.isDirectory()) {
    res.json(await listDirectory(deps.guard, resolved));
    return;
  }
  if (!resolved.stats.isFile()) {
    throw new SbxError(
      'FORBIDDEN',
      `${target.display} is ${describeSpecial(resolved.stats)}; only regular files and directories can be read`,
    );
  }
  const file = await openRegularFile(deps.guard, resolved.host, target.display);
  try {
    await sendFile(deps, req, res, file, target);
  } finally {
    // The body has been read (or was never needed: 304, HEAD, 416, empty) by now.
    await file.handle.close().catch(() => undefined);
  }
}
