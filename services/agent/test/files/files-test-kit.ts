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

/** Every name under `dir`, never following a symlink (readdirSync's `recursive` does). */
export function treeOf(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const name = `${prefix}${entry.name}`;
      return entry.isDirectory() ? [name, ...treeOf(path.join(dir, entry.name), `${name}/`)] : [name];
    })
    .toSorted();
}

/** The refusal of `/proc`, of anything leading there and of the agent's own files. */
export const NOT_SERVED = /leads into \/proc or the agent's own files, which the file API does not serve/;

export type FileOperation = (raw: string) => Promise<RawResponse>;

/** Every file operation; the routes whose path is the `/files/{tail}` URL end in ` /files)`. */
export const FILE_OPERATION_NAMES = [
  'read (GET /files)',
  'read (download)',
  'stat',
  'write (PUT /files)',
  'write (upload)',
  'delete (DELETE /files)',
  'delete (DELETE /v1/files)',
  'move (from)',
  'move (to)',
  'list',
  'mkdir -p',
] as const;
export type FileOperationName = (typeof FILE_OPERATION_NAMES)[number];

/** The operations whose path is a sandbox path (query or JSON body), where an absolute path is absolute. */
export const SANDBOX_PATH_OPERATION_NAMES = FILE_OPERATION_NAMES.filter((name) => !name.endsWith(' /files)'));

/**
 * Every file operation, each given a path as it is sent in a URL path or query (decoded
 * exactly once by the agent; for JSON bodies it is decoded here). The `/files/{tail}`
 * routes read it relative to the workspace. Moves go from `path` to `moved-away`, or from
 * `ok.txt` to `path`; mkdir -p makes `path/x`; deletes are recursive.
 */
export function fileOperations(agent: TestAgent, token: string): Record<FileOperationName, FileOperation> {
  const json = { 'content-type': 'application/json' };
  const text = (raw: string): string => decodeURIComponent(raw);
  return {
    'read (GET /files)': (raw) => send(agent, { method: 'GET', path: `/files/${raw}`, token }),
    'read (download)': (raw) => send(agent, { method: 'GET', path: `/v1/files/download?path=${raw}`, token }),
    stat: (raw) => send(agent, { method: 'GET', path: `/v1/files/stat?path=${raw}`, token }),
    'write (PUT /files)': (raw) =>
      send(agent, { method: 'PUT', path: `/files/${raw}`, token, body: 'pwned' }),
    'write (upload)': (raw) =>
      send(agent, { method: 'POST', path: `/v1/files/upload?path=${raw}`, token, body: 'pwned' }),
    'delete (DELETE /files)': (raw) =>
      send(agent, { method: 'DELETE', path: `/files/${raw}?recursive=true`, token }),
    'delete (DELETE /v1/files)': (raw) =>
      send(agent, { method: 'DELETE', path: `/v1/files?path=${raw}&recursive=true`, token }),
    'move (from)': (raw) =>
      send(agent, {
        method: 'POST',
        path: '/v1/files/move',
        token,
        headers: json,
        body: JSON.stringify({ from: text(raw), to: 'moved-away' }),
      }),
    'move (to)': (raw) =>
      send(agent, {
        method: 'POST',
        path: '/v1/files/move',
        token,
        headers: json,
        body: JSON.stringify({ from: 'ok.txt', to: text(raw), overwrite: true }),
      }),
    list: (raw) => send(agent, { method: 'GET', path: `/v1/files/list?path=${raw}`, token }),
    'mkdir -p': (raw) =>
      send(agent, {
        method: 'POST',
        path: '/v1/files/mkdir',
        token,
        headers: json,
        body: JSON.stringify({ path: `${text(raw)}/x`, parents: true }),
      }),
  };
}

export function urlPath(workspacePath: string): string {
  return workspacePath.split('/').map(encodeURIComponent).join('/');
}

/** Upload temporaries (`.sbx-upload-*`) anywhere under `dir`, never following a symlink. */
export function uploadTemporaries(dir: string): string[] {
  return treeOf(dir).filter((name) => path.basename(name).startsWith('.sbx-upload-'));
}

export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
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
