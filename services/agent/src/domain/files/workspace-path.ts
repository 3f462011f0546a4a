import { SbxError } from '@sbx/protocol';

/**
 * A path inside the workspace, checked for shape only (the guard resolves it on disk).
 * `display` is the canonical form every response uses: `/a/b`, `/` for the root.
 */
export interface WorkspacePath {
  /** Names from the root down; never empty strings, `.` or `..`. */
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

export const WORKSPACE_ROOT: WorkspacePath = { segments: [], display: '/' };

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

/**
 * Parses a workspace path given as text (query parameter, JSON body, signed URL).
 * A leading `/` means the workspace root, as E2B and Daytona users write paths;
 * host paths are never interpreted, so `/etc/passwd` is `<workspace>/etc/passwd`.
 */
export function parseWorkspacePath(text: string): WorkspacePath {
  if (Buffer.byteLength(text) > MAX_PATH_BYTES) throw badPath(`path is longer than ${MAX_PATH_BYTES} bytes`);
  if (hasControlCharacter(text)) throw badPath('path must not contain NUL or control characters');
  if (text.includes('\\')) throw badPath('path must not contain backslashes; "/" is the only separator');
  if (ENCODED_SPECIAL.test(text)) {
    throw badPath(
      'path contains a percent-encoded dot, slash, backslash or control character after decoding',
    );
  }
  const segments = text.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) throw badPath('path must not contain ".." segments');
  if (segments.some((segment) => Buffer.byteLength(segment) > MAX_NAME_BYTES)) {
    throw badPath(`a path segment is longer than ${MAX_NAME_BYTES} bytes`);
  }
  return { segments, display: `/${segments.join('/')}` };
}

/**
 * Parses the still-encoded tail of a URL path (`/files/<tail>`): each segment is
 * percent-decoded exactly once, and a segment that decodes to contain `/` (`%2F`) is
 * refused rather than allowed to create a separator the router never saw.
 */
export function parseEncodedPath(rawTail: string): WorkspacePath {
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
  return parseWorkspacePath(decoded.join('/'));
}

export function childPath(parent: WorkspacePath, name: string): WorkspacePath {
  const segments = [...parent.segments, name];
  return { segments, display: `/${segments.join('/')}` };
}

export function isWorkspaceRoot(path: WorkspacePath): boolean {
  return path.segments.length === 0;
}
