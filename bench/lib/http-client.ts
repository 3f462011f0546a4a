/**
 * A minimal HTTP client on node:http, the same one for a floor and its subject, so the
 * client's own cost cancels out of the ratio (fetch/undici would add its own).
 */
import { request as httpRequest, Agent, type OutgoingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';

export interface Reply {
  readonly status: number;
  /** The body as text, or empty when only counted. */
  readonly text: string;
  readonly bytes: number;
}

export interface RequestOptions {
  readonly method?: string;
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: string | Readable;
  readonly agent?: Agent;
  /** Count the body's bytes without keeping them (downloads). */
  readonly countOnly?: boolean;
}

/** One connection reused request after request, as a real client would. */
export function keepAliveAgent(): Agent {
  return new Agent({ keepAlive: true, maxSockets: 1 });
}

export function request(url: string, options: RequestOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: options.method ?? 'GET', headers: options.headers, agent: options.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (options.countOnly !== true) chunks.push(chunk);
        });
        res.once('error', reject);
        res.once('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), bytes }),
        );
      },
    );
    req.once('error', reject);
    const body = options.body;
    if (body === undefined) req.end();
    else if (typeof body === 'string') req.end(body);
    else body.pipe(req);
  });
}
