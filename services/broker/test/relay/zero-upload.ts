// A large upload generated as it is sent, never held: what the relay memory tests push.
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const CHUNK = Buffer.alloc(1024 * 1024);

/** Sends `bytes` zero bytes to `url` (1 MiB at a time); resolves with the answer's status and body. */
export function uploadZeros(
  url: string,
  bytes: number,
  options: { readonly method: 'PUT' | 'POST'; readonly headers?: Readonly<Record<string, string>> },
): Promise<{ status: number; body: string }> {
  async function* body(): AsyncGenerator<Buffer> {
    for (let sent = 0; sent < bytes; sent += CHUNK.length) yield CHUNK;
  }
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: options.method,
      headers: {
        ...options.headers,
        'content-length': String(bytes),
        'content-type': 'application/octet-stream',
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => (text += part));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    pipeline(Readable.from(body()), req).catch(reject);
  });
}
