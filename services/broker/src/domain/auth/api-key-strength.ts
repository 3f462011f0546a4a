// Whether an operator-chosen API key (BROKER_BOOTSTRAP_API_KEY) is strong enough
// to guard a cross-tenant admin. Operators generate secrets with their own tools,
// so any shape is accepted that is long, bearer-safe and not obviously weak.
//
// The estimate is deliberately simple, not a password meter: each character that
// a guesser could not predict from those before it is worth log2 of the pool of
// the character classes the key uses. Predictable are characters that continue
// a run of equal steps (aaaa, 1234, zyxw) or repeat an earlier four-character
// stretch (abcdeabcde). Random secrets lose almost nothing to either rule: 32
// random hex digits estimate at about 165 bits. A dictionary passphrase can still
// pass; the check refuses only what is weak at a glance.
import {
  isOperatorKeyShape,
  OPERATOR_KEY_MAX_LENGTH,
  OPERATOR_KEY_MIN_LENGTH,
} from '../../store/api-key-repository.js';

export const MIN_DISTINCT_CHARACTERS = 10;
export const MIN_ESTIMATED_BITS = 128;
const REPEAT_SPAN = 4;

export const NEW_KEY_ADVICE =
  'generate one with `openssl rand -hex 32` or `pnpm --filter ./services/broker new-api-key`';

const CLASSES: readonly { readonly pattern: RegExp; readonly size: number }[] = [
  { pattern: /[a-z]/, size: 26 },
  { pattern: /[A-Z]/, size: 26 },
  { pattern: /[0-9]/, size: 10 },
  { pattern: /[-_~+/]/, size: 5 },
];

/**
 * Why `key` may not be an operator-chosen API key, or undefined when it may.
 * The reason never contains the key; callers prefix the variable's name.
 */
export function apiKeyWeakness(key: string): string | undefined {
  const problem = shapeProblem(key) ?? strengthProblem(key.replace(/=+$/, ''));
  return problem === undefined ? undefined : `${problem}; ${NEW_KEY_ADVICE}`;
}

function shapeProblem(key: string): string | undefined {
  if (key.length < OPERATOR_KEY_MIN_LENGTH) return `must be at least ${OPERATOR_KEY_MIN_LENGTH} characters`;
  if (key.length > OPERATOR_KEY_MAX_LENGTH) return `must be at most ${OPERATOR_KEY_MAX_LENGTH} characters`;
  // A bearer token cannot carry other characters, and a dot would make it look like an OIDC token.
  if (!isOperatorKeyShape(key)) return 'may contain only letters, digits, - _ ~ + / and trailing = padding';
  return undefined;
}

function strengthProblem(secret: string): string | undefined {
  if (new Set(secret).size < MIN_DISTINCT_CHARACTERS)
    return `is too weak: it uses fewer than ${MIN_DISTINCT_CHARACTERS} distinct characters`;
  const bits = estimatedBits(secret);
  if (bits < MIN_ESTIMATED_BITS) {
    return (
      `is too weak: it repeats itself or runs in sequence (about ${Math.floor(bits)} bits of entropy, ` +
      `at least ${MIN_ESTIMATED_BITS} needed)`
    );
  }
  return undefined;
}

/** The estimate described at the top of this file. */
export function estimatedBits(secret: string): number {
  const pool = CLASSES.reduce((sum, c) => (c.pattern.test(secret) ? sum + c.size : sum), 0);
  return unpredictableCount(secret) * Math.log2(Math.max(pool, 1));
}

function unpredictableCount(secret: string): number {
  const seen = new Set<string>();
  let count = 0;
  for (let i = 0; i < secret.length; i++) {
    const stretch = i + 1 >= REPEAT_SPAN ? secret.slice(i + 1 - REPEAT_SPAN, i + 1) : undefined;
    const repeats = stretch !== undefined && seen.has(stretch);
    if (stretch !== undefined) seen.add(stretch);
    if (!repeats && !continuesRun(secret, i)) count++;
  }
  return count;
}

/** The character makes the third equal step in a row: aaaa, 0123, fedc. */
function continuesRun(secret: string, i: number): boolean {
  if (i < 3) return false;
  const step = (j: number): number => secret.charCodeAt(j) - secret.charCodeAt(j - 1);
  return step(i) === step(i - 1) && step(i - 1) === step(i - 2);
}
