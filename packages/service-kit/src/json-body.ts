// A small JSON request body read by the route itself, for a hot route left out of
// express.json: on the relayed command (the broker's hottest path) express.json, with its
// content negotiation, decoder and inflation, took 76–141 µs where this takes 35–90 µs
// (bench/README.md "bench/relay"). It answers as express.json does for what clients send: a
// JSON object or array, at most `limitBytes`, `undefined` when there is no body, 415 for a body
// of another type.
import type { IncomingMessage } from 'node:http';
import { SbxError } from '@sbx/protocol';

/** The largest JSON request body the services read, with express.json or readJsonBody. */
export const JSON_BODY_LIMIT_BYTES = 256 * 1024;

const JSON_TYPE = /^application\/json\s*(;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)/i;

/** Whether the request carries a body: a chunked one, or one of a declared non-zero length. */
export function hasRequestBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  return Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * 415 UNSUPPORTED_MEDIA_TYPE for a body not declared as JSON, on a route that reads JSON.
 * Without the header no parser reads it, and the route's schema would complain about the
 * fields it misses (`mode: Invalid option …`) instead of the header. A request without a
 * body passes (a route whose schema allows it takes `{}`). The body is read off unparsed,
 * so a kept-alive connection carries the next request.
 */
export function refuseNonJsonBody(req: IncomingMessage): void {
  const type = req.headers['content-type'];
  if ((type !== undefined && JSON_TYPE.test(type)) || !hasRequestBody(req)) return;
  if (!req.readableEnded) req.resume();
  const sent = type === undefined ? 'without a Content-Type' : `as ${type.split(';')[0]?.trim() ?? type}`;
  throw new SbxError(
    'UNSUPPORTED_MEDIA_TYPE',
    `the request body came ${sent}: send Content-Type: application/json with a JSON body`,
  );
}

/** The JSON body a parser (express.json) left on `req.body`, after refusing one not declared as JSON. */
export function jsonBodyOf(req: IncomingMessage & { readonly body?: unknown }): unknown {
  refuseNonJsonBody(req);
  return req.body;
}

/**
 * The body parsed, `undefined` when there is none; a body that is not `application/json`
 * is 415 (refuseNonJsonBody). Other refusals are SbxErrors too.
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  refuseNonJsonBody(req);
  const type = req.headers['content-type'];
  if (type === undefined || !JSON_TYPE.test(type)) return undefined;
  // A body something else has read would never end here: fail instead of waiting forever.
  if (req.readableEnded) throw new SbxError('INTERNAL', 'the request body was already read');
  refuseUnreadable(req, type, limitBytes);
  const text = await readText(req, limitBytes);
  if (text.length === 0) return {};
  return parseStrict(text);
}

function refuseUnreadable(req: IncomingMessage, type: string, limitBytes: number): void {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity')
    throw new SbxError(
      'BAD_REQUEST',
      `Content-Encoding ${encoding} is not accepted here: send the JSON as is`,
    );
  const charset = CHARSET.exec(type)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
    throw new SbxError('BAD_REQUEST', `charset ${charset} is not accepted: JSON is UTF-8`);
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limitBytes) throw tooLarge();
}

const tooLarge = () => new SbxError('PAYLOAD_TOO_LARGE', 'request body is too large');

/** Reads the whole body; past the limit it refuses at once and discards the rest as it comes. */
function readText(req: IncomingMessage, limitBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limitBytes) chunks.push(chunk);
      else finish(tooLarge());
    };
    const onEnd = (): void => finish(undefined);
    const onClose = (): void => finish(new SbxError('BAD_REQUEST', 'request body ended early'));
    const finish = (err: SbxError | undefined): void => {
      req.off('data', onData).off('end', onEnd).off('error', onClose).off('close', onClose);
      if (err === undefined) resolve(Buffer.concat(chunks, size).toString('utf8'));
      else {
        // As express.json does: the rest is read off, so the connection stays usable.
        req.resume();
        reject(err);
      }
    };
    req.on('data', onData).on('end', onEnd).on('error', onClose).on('close', onClose);
  });
}

/** Only an object or an array, as express.json's strict mode. */
function parseStrict(text: string): unknown {
  const first = /\S/.exec(text)?.[0];
  if (first !== '{' && first !== '[') throw notJson();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw notJson();
  }
}

const notJson = () => new SbxError('BAD_REQUEST', 'request body is not valid JSON');
