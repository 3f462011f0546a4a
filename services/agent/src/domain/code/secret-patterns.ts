/**
 * What the code runner's redactor looks for (docs/code-runner.md#redactor). Text here is
 * "binary" (latin1) strings: one character per byte, so every byte survives unchanged and
 * bytes ≥ 0x80 are never part of a secret.
 *
 * Every secret is made of token characters only — except `Bearer <credential>`, whose
 * blanks the redactor handles separately — which is what lets the streaming redactor
 * cut its input between runs of token characters without changing what matches.
 */

export type SecretKind =
  'bearer' | 'jwt' | 'sbx_api_key' | 'sbx_token' | 'github' | 'slack' | 'sk_key' | 'aws_access_key';

/** Token characters: RFC 6750's b64token set, a superset of every secret's alphabet. */
export function isTokenChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) || // 0-9
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    code === 0x2d || // -
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x7e || // ~
    code === 0x2b || // +
    code === 0x2f || // /
    code === 0x3d // =
  );
}

/** The blanks allowed between `Bearer` and its credential. */
export function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** The word that introduces a credential the redactor must keep in view (lower case). */
export const BEARER_WORD = 'bearer';

const B64URL = '[A-Za-z0-9_-]';
/** A secret starts where no identifier-like character precedes it (`task-list` is not `sk-…`). */
const START = '(?<![A-Za-z0-9_-])';

/** One alternative per kind, named after it; the first alternative that matches at a position wins. */
const ALTERNATIVES: ReadonlyArray<readonly [SecretKind, string]> = [
  ['bearer', `(?<bearerWord>(?:Bearer|bearer|BEARER)[ \\t]+)[A-Za-z0-9._~+/=-]{8,}`],
  ['jwt', `eyJ${B64URL}{5,}\\.eyJ${B64URL}{5,}\\.${B64URL}*`],
  ['sbx_api_key', `sbk_[0-9a-f]{12}_${B64URL}{43,}`],
  ['sbx_token', `sbo_${B64URL}{43,}`],
  ['github', `(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`],
  ['slack', `(?:xox[abprse]|xapp)-[A-Za-z0-9-]{10,}`],
  ['sk_key', `sk-${B64URL}{20,}`],
  ['aws_access_key', `(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9_])`],
];

/** All kinds in one global regex, one named group per kind (named as the kind). */
export function secretPattern(): RegExp {
  const body = ALTERNATIVES.map(([kind, source]) => `(?<${kind}>${source})`).join('|');
  return new RegExp(`${START}(?:${body})`, 'g');
}

export interface SecretMatch {
  readonly start: number;
  readonly end: number;
  readonly kind: SecretKind;
  /** Characters at the start of the match that stay (the `Bearer ` of a bearer credential). */
  readonly keep: number;
}

/** Every match in `text` from index `from` on (what precedes `from` is context for the look-behind). */
export function findSecrets(text: string, from: number): SecretMatch[] {
  const pattern = secretPattern();
  pattern.lastIndex = from;
  const matches: SecretMatch[] = [];
  for (let found = pattern.exec(text); found !== null; found = pattern.exec(text)) {
    const groups = found.groups ?? {};
    const kind = ALTERNATIVES.find(([name]) => groups[name] !== undefined)?.[0] ?? 'bearer';
    const keep = kind === 'bearer' ? (groups['bearerWord']?.length ?? 0) : 0;
    matches.push({ start: found.index, end: found.index + found[0].length, kind, keep });
  }
  return matches;
}

/** The marker a secret of `kind` is replaced by. */
export function markerOf(kind: SecretKind): string {
  return `[REDACTED:${kind}]`;
}
