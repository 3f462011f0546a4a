import { z } from 'zod';
import { Timestamp } from './primitives.js';

/**
 * Wire shapes of the agent's files API (services/agent validates with them, the SDK
 * parses answers with them).
 *
 * Paths are sandbox paths, the same for files, exec and shells: an absolute path is what
 * processes of the sandbox see (`/workspace/a/b` under bubblewrap, `/tmp/x`); a relative
 * path (`a/b`) is relative to the workspace. Answers always give the absolute form. See
 * docs/files.md.
 */
export const WorkspacePathText = z
  .string()
  .min(1)
  .max(4096)
  .describe(
    'Sandbox path: absolute as its processes see it (e.g. /workspace/a, /tmp/x) or relative to the workspace',
  );

/** `?path=` of the `/v1/files/*` routes (decoded once by the query parser, then checked by the path guard). */
export const FilePathQuery = z.object({ path: WorkspacePathText });
export type FilePathQuery = z.infer<typeof FilePathQuery>;

/** `?recursive=true` deletes a directory with its contents; absent or `false`: only an empty one. */
export const RecursiveQuery = z.object({ recursive: z.enum(['true', 'false']).optional() });

/** `DELETE /v1/files?path=&recursive=`. */
export const FileRemoveQuery = FilePathQuery.extend(RecursiveQuery.shape);
export type FileRemoveQuery = z.infer<typeof FileRemoveQuery>;

/** `/files/{path}`: the URL tail, always relative to the workspace (`/files` alone is the workspace). */
export const FilesUrlParams = z.strictObject({
  path: z
    .string()
    .describe('Relative to the workspace; may hold "/" between segments, each percent-encoded once'),
});

/** `GET /v1/info`: where things are in this sandbox, for any token holder of it. */
export const SandboxInfo = z.object({
  sandbox_id: z.string(),
  /** The workspace as every process of the sandbox sees it; also their HOME and default cwd. */
  workspace_path: z.string().regex(/^\//, 'must be an absolute path'),
  home: z.string().regex(/^\//, 'must be an absolute path'),
  version: z.string(),
});
export type SandboxInfo = z.infer<typeof SandboxInfo>;

export const MkdirRequest = z.strictObject({
  path: WorkspacePathText,
  /** Create missing parents, and do not fail when the directory exists (`mkdir -p`). */
  parents: z.boolean().optional(),
});
export type MkdirRequest = z.infer<typeof MkdirRequest>;

export const MoveRequest = z.strictObject({
  from: WorkspacePathText,
  to: WorkspacePathText,
  /** Replace an existing destination (never a directory by a file). */
  overwrite: z.boolean().optional(),
});
export type MoveRequest = z.infer<typeof MoveRequest>;

export const FileEntryType = z.enum(['file', 'dir', 'symlink', 'other']);

export const FileEntry = z.object({
  name: z.string(),
  type: FileEntryType,
  size: z.number().int().nonnegative(),
  mode: z.string().regex(/^[0-7]{4}$/, 'octal permission bits such as "0644"'),
  mtime: Timestamp,
});
export type FileEntry = z.infer<typeof FileEntry>;

/** `GET /files/{dir}` and `GET /v1/files/list`: one directory, entries sorted by name. */
export const DirectoryListing = z.object({ path: z.string(), entries: z.array(FileEntry) });
export type DirectoryListing = z.infer<typeof DirectoryListing>;

/** stat, mkdir, move and upload answers: the entry at its canonical path; `etag` for files. */
export const PathInfo = FileEntry.extend({ path: z.string(), etag: z.string().optional() });
export type PathInfo = z.infer<typeof PathInfo>;
