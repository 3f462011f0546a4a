import { SbxError } from '@sbx/protocol';

/**
 * A path of the sandbox's filesystem, checked for shape only (the guard resolves it on
 * disk). `display` is the canonical absolute form every response uses, e.g.
 * `/workspace/a/b`, `/tmp/x`, `/` for the root.
 */
export interface SandboxPath {
  /** Names from `/` down; never empty strings, `.` or `..`. */
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

/** The absolute path of `segments`: [a, b] → `/a/b`, [] → `/`. */
export function displayOf(segments: readonly string[]): string {
  return `/${segments.join('/')}`;
}

/** The names of an absolute path, without empty and `.` segments. */
export function namesOf(absolute: string): string[] {
  return absolute.split('/').filter((segment) => segment !== '' && segment !== '.');
}

/**
 * Parses a path given as text (query parameter, JSON body, watch frame) the way every
 * process of the sandbox reads it: an absolute path is the sandbox's own (`/tmp/x`,
 * `/etc/os-release`, `/workspace/a`); a relative one is relative to the `workspace`.
 */
export function parseSandboxPath(text: string, workspace: string): SandboxPath {
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
  const segments = text.startsWith('/') ? names : [...namesOf(workspace), ...names];
  return { segments, display: displayOf(segments) };
}

/**
 * Parses the still-encoded tail of a URL path (`/files/<tail>`), which is always relative
 * to the workspace (a URL cannot say "relative"; docs/files.md). Each segment is
 * percent-decoded exactly once, and a segment that decodes to contain `/` (`%2F`) is
 * refused rather than allowed to create a separator the router never saw.
 */
export function parseEncodedPath(rawTail: string, workspace: string): SandboxPath {
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
  return parseSandboxPath(decoded.filter((name) => name !== '').join('/'), workspace);
}

export function childPath(parent: SandboxPath, name: string): SandboxPath {
  return { segments: [...parent.segments, name], display: displayOf([...parent.segments, name]) };
}

export function isFilesystemRoot(path: SandboxPath): boolean {
  return path.segments.length === 0;
}
