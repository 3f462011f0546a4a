import { request, type ClientRequest } from 'node:http';
import type { TestAgent } from '../support/agent-harness.js';
import type { RawResponse } from './files-test-kit.js';

export interface StreamedUpload {
  readonly method?: string;
  readonly path: string;
  readonly token: string;
  readonly chunks: Iterable<Buffer>;
  /** Declared length; absent: chunked transfer encoding. */
  readonly contentLength?: number;
  readonly headers?: Record<string, string>;
  /** Pause between chunks, so concurrent uploads really interleave. */
  readonly pauseMs?: number;
}

/** An upload request whose body is written chunk by chunk, as a slow or large client would. */
export function openUpload(agent: TestAgent, options: StreamedUpload): ClientRequest {
  const url = new URL(agent.httpUrl);
  const headers: Record<string, string> = { ...options.headers, authorization: `Bearer ${options.token}` };
  if (options.contentLength === undefined) headers['transfer-encoding'] = 'chunked';
  else headers['content-length'] = String(options.contentLength);
  return request({
    host: url.hostname,
    port: url.port,
    method: options.method ?? 'PUT',
    path: options.path,
    headers,
    agent: false,
  });
}

function waitForDrain(req: ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      req.off('drain', done);
      req.off('close', done);
      resolve();
    };
    req.on('drain', done);
    req.on('close', done);
  });
}

/**
 * Streams the chunks and resolves with the response. A server may answer before the
 * body is complete (413): writing stops then, and the reset that follows is not an error.
 */
export function streamUpload(agent: TestAgent, options: StreamedUpload): Promise<RawResponse> {
  const req = openUpload(agent, options);
  return new Promise<RawResponse>((resolve, reject) => {
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
      res.on('error', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const write = async (): Promise<void> => {
      for (const chunk of options.chunks) {
        if (answered || req.destroyed) return;
        if (!req.write(chunk)) await waitForDrain(req);
        if (options.pauseMs !== undefined) await new Promise((wake) => setTimeout(wake, options.pauseMs));
      }
      if (!answered && !req.destroyed) req.end();
    };
    write().catch(reject);
  });
}

/** `count` chunks of `size` bytes, each filled from `seed` so two uploads differ everywhere. */
export function* patternChunks(seed: number, count: number, size: number): Generator<Buffer> {
  for (let i = 0; i < count; i++) yield Buffer.alloc(size, (seed + i) % 251);
}
