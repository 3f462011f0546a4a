// HTTP/1.1 over a bare TCP socket: fetch and node:http refuse to send what the fuzz
// suites must send (bytes that are not UTF-8 in paths and headers, lying Content-Length,
// broken chunking, junk methods). One request per connection (`Connection: close`).
import { connect } from 'node:net';

/** How the body is framed: honestly, or in a way the server must refuse or survive. */
export type Framing =
  | 'length' // Content-Length: the body's size
  | 'chunked' // Transfer-Encoding: chunked, well formed
  | 'bad-chunk' // chunked, with a chunk size that is not hex
  | 'short' // Content-Length smaller than the body (the rest is a second, garbage request)
  | 'truncated' // Content-Length larger than the body, then the client half-closes
  | 'two-lengths' // two Content-Length headers that disagree
  | 'length-and-chunked'; // both framings at once (request smuggling's favourite)

export interface RawRequest {
  readonly method: string;
  /** The request target as bytes (path and query), sent as is. */
  readonly target: Buffer;
  readonly headers: readonly (readonly [string, Buffer])[];
  readonly body?: Buffer | undefined;
  readonly framing: Framing;
  readonly version?: string;
}

export type Outcome =
  | {
      readonly kind: 'answer';
      readonly status: number;
      readonly headers: Readonly<Record<string, string>>;
      readonly body: Buffer;
    }
  /** The server closed (or reset) the connection without a byte of answer. */
  | { readonly kind: 'closed'; readonly reset: boolean }
  | { readonly kind: 'hang' };

function framingHeaders(framing: Framing, body: Buffer | undefined): string[] {
  const size = body?.length ?? 0;
  switch (framing) {
    case 'length':
      return body === undefined ? [] : [`Content-Length: ${size}`];
    case 'chunked':
    case 'bad-chunk':
      return ['Transfer-Encoding: chunked'];
    case 'short':
      return [`Content-Length: ${Math.floor(size / 2)}`];
    case 'truncated':
      return [`Content-Length: ${size + 1 + size * 3}`];
    case 'two-lengths':
      return [`Content-Length: ${size}`, `Content-Length: ${size + 1}`];
    case 'length-and-chunked':
      return [`Content-Length: ${size}`, 'Transfer-Encoding: chunked'];
    default:
      return exhausted(framing);
  }
}

function exhausted(framing: never): never {
  throw new Error(`no headers for framing ${String(framing)}`);
}

function framedBody(framing: Framing, body: Buffer | undefined): Buffer {
  const bytes = body ?? Buffer.alloc(0);
  if (framing === 'chunked' || framing === 'length-and-chunked') {
    const chunk = bytes.length === 0 ? '' : `${bytes.length.toString(16)}\r\n`;
    return Buffer.concat([
      Buffer.from(chunk),
      bytes,
      Buffer.from(bytes.length === 0 ? '0\r\n\r\n' : '\r\n0\r\n\r\n'),
    ]);
  }
  if (framing === 'bad-chunk')
    return Buffer.concat([Buffer.from('zz\r\n'), bytes, Buffer.from('\r\n0\r\n\r\n')]);
  return bytes;
}

export function encodeRequest(request: RawRequest, host: string): Buffer {
  const head = [
    Buffer.from(`${request.method} `, 'latin1'),
    request.target,
    Buffer.from(` ${request.version ?? 'HTTP/1.1'}\r\nHost: ${host}\r\nConnection: close\r\n`, 'latin1'),
    ...request.headers.flatMap(([name, value]) => [
      Buffer.from(`${name}: `, 'latin1'),
      value,
      Buffer.from('\r\n'),
    ]),
    ...framingHeaders(request.framing, request.body).map((line) => Buffer.from(`${line}\r\n`)),
    Buffer.from('\r\n'),
  ];
  return Buffer.concat([...head, framedBody(request.framing, request.body)]);
}

function dechunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n', at);
    if (end < 0) break;
    const size = parseInt(bytes.subarray(at, end).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(bytes.subarray(end + 2, end + 2 + size));
    at = end + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** The first final answer in what the server sent (1xx interim answers skipped). */
export function parseAnswer(bytes: Buffer): Outcome {
  let at = 0;
  for (;;) {
    const headEnd = bytes.indexOf('\r\n\r\n', at);
    if (headEnd < 0) return { kind: 'closed', reset: false };
    const lines = bytes.subarray(at, headEnd).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? NaN);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    at = headEnd + 4;
    if (status >= 100 && status < 200) continue;
    let body = bytes.subarray(at);
    const length = headers['content-length'];
    if (length !== undefined) body = body.subarray(0, Number(length));
    else if (headers['transfer-encoding']?.includes('chunked') === true) body = dechunk(body);
    return { kind: 'answer', status, headers, body };
  }
}

/** Sends `request` to `url`'s host and port; the whole exchange must end within `ceilingMs`. */
export function send(url: string, request: RawRequest, ceilingMs: number): Promise<Outcome> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const received: Buffer[] = [];
    let reset = false;
    let settled = false;
    const finish = (outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ kind: 'hang' }), ceilingMs);
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', () => {
      reset = true;
    });
    socket.on('close', () => {
      const outcome = parseAnswer(Buffer.concat(received));
      finish(outcome.kind === 'closed' ? { kind: 'closed', reset } : outcome);
    });
    // A server may answer (and close) before it read everything: a write error is then expected.
    // Only a truncated body is followed by the client's end of the stream: after a whole request
    // the server would take it for the client giving up (node answers nothing then).
    const bytes = encodeRequest(request, `${hostname}:${port}`);
    if (request.framing === 'truncated') socket.end(bytes);
    else socket.write(bytes);
  });
}
