// The agent's files API (docs/protocol.md#files, services/agent/src/http/files): the
// original `/files/{path}` routes, relative to the workspace, and the `/v1/files/*` ones
// taking any sandbox path. Download and upload also take a signed URL.
import { z } from 'zod';
import type { AgentRouteSpec } from './agent-route-spec.js';
import {
  DirectoryListing,
  FilePathQuery,
  FileRemoveQuery,
  FilesUrlParams,
  MkdirRequest,
  MoveRequest,
  PathInfo,
  RecursiveQuery,
} from './dataplane-files.js';
import type { ErrorCode } from './errors.js';

const NoParams = z.strictObject({});

/** Every route: a refused token (401), a missing scope (403), an opaque token the broker could not check (503). */
const AUTH = ['UNAUTHENTICATED', 'CAPABILITY_DENIED', 'BACKEND_UNAVAILABLE'] as const;
/** A malformed path (400), a refused one or the kernel's permission denied (403), nothing there (404). */
const PATH = ['BAD_REQUEST', 'FORBIDDEN', 'NOT_FOUND'] as const;
const READ = [...AUTH, ...PATH, 'RANGE_NOT_SATISFIABLE'] as const satisfies readonly ErrorCode[];
const WRITE = [...AUTH, ...PATH, 'CONFLICT', 'INSUFFICIENT_STORAGE'] as const satisfies readonly ErrorCode[];
const UPLOAD = [...WRITE, 'PRECONDITION_FAILED', 'PAYLOAD_TOO_LARGE'] as const satisfies readonly ErrorCode[];
/** mkdir and move: a JSON body of at most 64 KiB. */
const JSON_WRITE = [...WRITE, 'PAYLOAD_TOO_LARGE'] as const satisfies readonly ErrorCode[];

/** A file's bytes (Content-Type by its extension), or a directory's JSON listing. */
const READ_ANSWER = {
  response: DirectoryListing,
  produces: { 'application/octet-stream': 'bytes' },
  statuses: [200, 206, 304],
  headers: ['Range', 'If-Range', 'If-None-Match'],
  alsoAuth: ['signed-url'],
  scopes: ['fs:ro'],
  errors: READ,
} as const satisfies Partial<AgentRouteSpec>;

/** The body becomes the file, atomically: 201 created, 200 replaced, both with the new ETag. */
const UPLOAD_ANSWER = {
  body: 'bytes',
  response: PathInfo,
  statuses: [201, 200],
  headers: ['If-Match', 'If-None-Match'],
  alsoAuth: ['signed-url'],
  scopes: ['fs:rw'],
  errors: UPLOAD,
} as const satisfies Partial<AgentRouteSpec>;

export const AGENT_FILE_ROUTES = {
  getFile: {
    method: 'GET',
    path: '/files/{path}',
    summary: 'Read a file (ranges, ETag) or list a directory; the path is relative to the workspace',
    params: FilesUrlParams,
    ...READ_ANSWER,
  },
  headFile: {
    method: 'HEAD',
    path: '/files/{path}',
    summary: "A file's headers (length, ETag, Last-Modified) without its body",
    params: FilesUrlParams,
    ...READ_ANSWER,
    produces: {},
  },
  putFile: {
    method: 'PUT',
    path: '/files/{path}',
    summary: 'Write a file atomically, creating missing parents; the path is relative to the workspace',
    params: FilesUrlParams,
    ...UPLOAD_ANSWER,
  },
  deleteFile: {
    method: 'DELETE',
    path: '/files/{path}',
    summary: 'Delete a file or an empty directory (a full one with recursive=true)',
    scopes: ['fs:rw'],
    params: FilesUrlParams,
    query: RecursiveQuery,
    errors: WRITE,
  },
  downloadFile: {
    method: 'GET',
    path: '/v1/files/download',
    summary: 'Read a file (ranges, ETag) or list a directory, by sandbox path',
    params: NoParams,
    query: FilePathQuery,
    ...READ_ANSWER,
  },
  uploadFile: {
    method: 'POST',
    path: '/v1/files/upload',
    summary: 'Write a file atomically by sandbox path, creating missing parents',
    params: NoParams,
    query: FilePathQuery,
    ...UPLOAD_ANSWER,
  },
  statPath: {
    method: 'GET',
    path: '/v1/files/stat',
    summary: 'Describe one entry (type, size, mode, mtime; ETag for files)',
    scopes: ['fs:ro'],
    params: NoParams,
    query: FilePathQuery,
    response: PathInfo,
    errors: [...AUTH, ...PATH],
  },
  listDirectory: {
    method: 'GET',
    path: '/v1/files/list',
    summary: "A directory's entries, sorted by name",
    scopes: ['fs:ro'],
    params: NoParams,
    query: FilePathQuery,
    response: DirectoryListing,
    errors: [...AUTH, ...PATH, 'CONFLICT'],
  },
  makeDirectory: {
    method: 'POST',
    path: '/v1/files/mkdir',
    summary: 'Create a directory (201), or with parents=true also accept an existing one (200)',
    scopes: ['fs:rw'],
    params: NoParams,
    body: MkdirRequest,
    response: PathInfo,
    statuses: [201, 200],
    errors: JSON_WRITE,
  },
  movePath: {
    method: 'POST',
    path: '/v1/files/move',
    summary: 'Rename or move an entry; overwrite=true replaces an existing destination',
    scopes: ['fs:rw'],
    params: NoParams,
    body: MoveRequest,
    response: PathInfo,
    errors: JSON_WRITE,
  },
  deletePath: {
    method: 'DELETE',
    path: '/v1/files',
    summary: 'Delete an entry by sandbox path (a non-empty directory with recursive=true)',
    scopes: ['fs:rw'],
    params: NoParams,
    query: FileRemoveQuery,
    errors: WRITE,
  },
} as const satisfies Record<string, AgentRouteSpec>;
