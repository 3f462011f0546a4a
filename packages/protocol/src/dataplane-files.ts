import { z } from 'zod';
import { Timestamp } from './primitives.js';

/**
 * Wire shapes of the agent's files API (services/agent validates with them, the SDK
 * parses answers with them).
 *
 * Paths are workspace paths: `/` is the workspace root and `a/b` equals `/a/b`.
 */
export const WorkspacePathText = z
  .string()
  .min(1)
  .max(4096)
  .describe('Workspace path; "/" is the workspace root');

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
