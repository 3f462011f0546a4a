import { expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { request, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ErrorEnvelope, type ErrorCode } from '@sbx/protocol';
import { filesFeature, type FilesOptions } from '../../src/http/files/files-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

export function startFilesAgent(options: FilesOptions = {}): Promise<TestAgent> {
  return startTestAgent({ features: (ctx) => [filesFeature(ctx, options)] });
}

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface RawRequest {
  readonly method: string;
  /** Sent byte for byte: no client-side normalization of `..` or percent-encoding. */
  readonly path: string;
  readonly token?: string;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer | string;
}

/** One HTTP request with node:http, which (unlike fetch) sends the path exactly as written. */
export function send(agent: TestAgent, options: RawRequest): Promise<RawResponse> {
  const url = new URL(agent.httpUrl);
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-length'] ??= String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: options.method,
        path: options.path,
        headers,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export function jsonOf(res: RawResponse): unknown {
  return JSON.parse(res.body.toString('utf8'));
}

/** Asserts an error envelope with `code` (and its status), never a stack trace. */
export function expectError(res: RawResponse, code: ErrorCode, status: number): string {
  expect({ status: res.status, type: res.headers['content-type'] }).toEqual({
    status,
    type: expect.stringContaining('application/json'),
  });
  const text = res.body.toString('utf8');
  expect(text).not.toMatch(/\bat .+\.(?:ts|js):\d+/);
  const envelope = ErrorEnvelope.parse(JSON.parse(text));
  expect(envelope.error.code).toBe(code);
  return envelope.error.message;
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export function urlPath(workspacePath: string): string {
  return workspacePath.split('/').map(encodeURIComponent).join('/');
}

/** Upload temporaries (`.sbx-upload-*`) anywhere under `dir`. */
export function uploadTemporaries(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) =>
    path.basename(name).startsWith('.sbx-upload-'),
  );
}

export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A directory outside the workspace, next to it in the temp dir, with a file whose
 * content and mtime must never change: every escape attempt aims at it.
 */
export class Sentinel {
  readonly dir: string;
  readonly file: string;
  readonly content = 'sentinel: must stay untouched\n';
  #mtimeMs: number;

  /** `at`: an exact directory to create (e.g. a sibling of the workspace) instead of a fresh temp dir. */
  constructor(at?: string) {
    if (at !== undefined) mkdirSync(at);
    this.dir = realpathSync(at ?? mkdtempSync(path.join(tmpdir(), 'sbx-files-sentinel-')));
    this.file = path.join(this.dir, 'sentinel.txt');
    writeFileSync(this.file, this.content);
    this.#mtimeMs = statSync(this.file).mtimeMs;
  }

  /** The sentinel directory as seen from `workspace` (`../sbx-files-sentinel-…`). */
  relativeFrom(workspace: string): string {
    return path.relative(workspace, this.dir);
  }

  /** What must never change: the directory's names, the file's content and mtime. */
  state(): { names: string[]; content: string; mtimeMs: number } {
    return {
      names: readdirSync(this.dir),
      content: readFileSync(this.file, 'utf8'),
      mtimeMs: statSync(this.file).mtimeMs,
    };
  }

  get original(): { names: string[]; content: string; mtimeMs: number } {
    return { names: ['sentinel.txt'], content: this.content, mtimeMs: this.#mtimeMs };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
