import { SbxError } from '@sbx/protocol';

/**
 * A path inside the workspace, checked for shape only (the guard resolves it on disk).
 * `display` is the canonical form every response uses: the absolute path processes of
 * the sandbox see, e.g. `/workspace/a/b`, `/workspace` for the root.
 */
export interface WorkspacePath {
  /** Names from the workspace root down; never empty strings, `.` or `..`. */
  readonly segments: readonly string[];
  readonly display: string;
}

export const MAX_PATH_BYTES = 4096;
const MAX_NAME_BYTES = 255;

/**
 * Text that a second percent-decoding would turn into a dot, separator, backslash or
 * control character. The path was decoded once already (by us for URL paths, by the query
 * parser for `?path=`); refusing these means no proxy, tool or later decoding step can
 * turn an innocent-looking name into `..` or `/`.
 */
const ENCODED_SPECIAL = /%(?:2e|2f|5c|[01][0-9a-f]|7f)/i;

function badPath(message: string): SbxError {
  return new SbxError('BAD_REQUEST', message);
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

/** `root` joined with `segments`: `/workspace` + [a, b] → `/workspace/a/b`. */
export function displayOf(root: string, segments: readonly string[]): string {
  if (segments.length === 0) return root;
  return root === '/' ? `/${segments.join('/')}` : `${root}/${segments.join('/')}`;
}

/** The names of an absolute sandbox path, without empty and `.` segments. */
export function namesOf(absolute: string): string[] {
  return absolute.split('/').filter((segment) => segment !== '' && segment !== '.');
}

/**
 * `segments` minus the leading names of `root`, or undefined when they do not start with
 * them: how an absolute sandbox path becomes a workspace path.
 */
export function belowRoot(root: string, segments: readonly string[]): string[] | undefined {
  const rootNames = namesOf(root);
  if (segments.length < rootNames.length) return undefined;
  if (rootNames.some((name, index) => segments[index] !== name)) return undefined;
  return segments.slice(rootNames.length);
}

function outsideWorkspace(shown: string, root: string): SbxError {
  return new SbxError(
    'FORBIDDEN',
    `${shown} is outside the workspace ${root}; the file API serves the workspace only ` +
      `(an absolute path inside it, or a path relative to it)`,
    { details: { workspace: root } },
  );
}

/**
 * Parses a path given as text (query parameter, JSON body, watch frame) the way every
 * process of the sandbox reads it: an absolute path is a sandbox path and must lie in
 * the workspace `root` (never remapped); a relative one is relative to the workspace.
 */
export function parseWorkspacePath(text: string, root: string): WorkspacePath {
  if (Buffer.byteLength(text) > MAX_PATH_BYTES) throw badPath(`path is longer than ${MAX_PATH_BYTES} bytes`);
  if (hasControlCharacter(text)) throw badPath('path must not contain NUL or control characters');
  if (text.includes('\\')) throw badPath('path must not contain backslashes; "/" is the only separator');
  if (ENCODED_SPECIAL.test(text)) {
    throw badPath(
      'path contains a percent-encoded dot, slash, backslash or control character after decoding',
    );
  }
  const names = namesOf(text);
  if (names.includes('..')) throw badPath('path must not contain ".." segments');
  if (names.some((segment) => Buffer.byteLength(segment) > MAX_NAME_BYTES)) {
    throw badPath(`a path segment is longer than ${MAX_NAME_BYTES} bytes`);
  }
  if (!text.startsWith('/')) return { segments: names, display: displayOf(root, names) };
  const segments = belowRoot(root, names);
  if (segments === undefined) throw outsideWorkspace(displayOf('/', names), root);
  return { segments, display: displayOf(root, segments) };
}

/**
 * Parses the still-encoded tail of a URL path (`/files/<tail>`), which is always relative
 * to the workspace (a URL cannot say "relative"; docs/files.md). Each segment is
 * percent-decoded exactly once, and a segment that decodes to contain `/` (`%2F`) is
 * refused rather than allowed to create a separator the router never saw.
 */
export function parseEncodedPath(rawTail: string, root: string): WorkspacePath {
  const decoded = rawTail.split('/').map((segment) => {
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      throw badPath('path is not valid percent-encoding');
    }
    if (name.includes('/')) throw badPath('path must not contain an encoded "/" (%2F)');
    return name;
  });
  return parseWorkspacePath(decoded.filter((name) => name !== '').join('/'), root);
}

export function childPath(parent: WorkspacePath, name: string): WorkspacePath {
  const segments = [...parent.segments, name];
  return { segments, display: parent.display === '/' ? `/${name}` : `${parent.display}/${name}` };
}

export function isWorkspaceRoot(path: WorkspacePath): boolean {
  return path.segments.length === 0;
}
