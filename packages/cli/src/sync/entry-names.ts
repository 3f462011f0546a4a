/** Text a second percent-decoding would turn into a dot, separator, backslash or control character. */
const ENCODED_SPECIAL = /%(?:2e|2f|5c|[01][0-9a-f]|7f)/i;
const MAX_NAME_BYTES = 255;

/**
 * Why `name` cannot be synced as one path segment, or undefined when it can. Names come
 * from both sides: the agent's listing is not trusted (a hostile or broken agent could
 * answer `../outside` to write outside the local directory), and a local name the agent
 * refuses (backslash, control character) would fail its upload half way through a sync.
 * These are skipped with a note in the report rather than ending the sync.
 */
export function nameProblem(name: string): string | undefined {
  if (name === '' || name === '.' || name === '..') return `"${name}" is not a file name`;
  if (name.includes('/')) return 'the name contains "/"';
  if (name.includes('\\')) return 'the name contains a backslash';
  if (hasAgentControlCharacter(name)) return 'the name contains a control character';
  if (ENCODED_SPECIAL.test(name))
    return 'the name contains a percent-encoded dot, slash or control character';
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `the name is longer than ${MAX_NAME_BYTES} bytes`;
  return undefined;
}

/** Skips an entry whose name `nameProblem` refuses; `rel` is its path as listed. */
export type OnRefusedName = (rel: string, problem: string) => void;

/** The agent's rule: C0 and DEL. (C1 characters are valid names; printing masks them.) */
function hasAgentControlCharacter(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
