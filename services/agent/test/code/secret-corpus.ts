/**
 * Real-shaped secrets and near misses for the redactor. The secrets are generated from a
 * fixed seed (no literal credential in the repository for a scanner to flag), with the
 * exact alphabet and length of the real thing.
 */

/** A deterministic generator (mulberry32): the same corpus on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const random = seededRandom(20_261_127);
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const B64URL = `${ALNUM}-_`;
const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const HEX = '0123456789abcdef';

function draw(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(random() * alphabet.length)];
  return out;
}

const b64url = (text: string): string => Buffer.from(text).toString('base64url');
const jwt = (claims: object, signed = true): string =>
  `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url(JSON.stringify(claims))}.${signed ? draw(B64URL, 43) : ''}`;

export interface SecretCase {
  readonly name: string;
  readonly kind: string;
  readonly before: string;
  /** What must disappear (for `bearer`: the credential after `Bearer `). */
  readonly secret: string;
  readonly after: string;
}

const JWT = jwt({ sub: 'usr_123', aud: 'sb_abc', scope: 'fs:rw process', exp: 1_900_000_000 });
const SBK = `sbk_${draw(HEX, 12)}_${draw(B64URL, 43)}`;
const SBO = `sbo_${draw(B64URL, 43)}`;
const OPAQUE = draw(B64URL, 32);

export const SECRETS: readonly SecretCase[] = [
  {
    name: 'JWT in JSON',
    kind: 'jwt',
    before: '{"access_token":"',
    secret: JWT,
    after: '","expires_in":300}',
  },
  {
    name: 'JWT in a URL query',
    kind: 'jwt',
    before: 'GET https://a.example/cb?token=',
    secret: JWT,
    after: '&x=1',
  },
  { name: 'JWT at a line end', kind: 'jwt', before: 'TOKEN=', secret: JWT, after: '\n' },
  { name: 'unsigned JWT', kind: 'jwt', before: "t = '", secret: jwt({ sub: 'x' }, false), after: "'" },
  {
    name: 'API key in an env dump',
    kind: 'sbx_api_key',
    before: 'HOME=/w\nSBX_API_KEY=',
    secret: SBK,
    after: '\nPATH=/bin\n',
  },
  { name: 'API key in single quotes', kind: 'sbx_api_key', before: "key = '", secret: SBK, after: "'" },
  { name: 'opaque token in JSON', kind: 'sbx_token', before: '{"token": "', secret: SBO, after: '"}' },
  { name: 'opaque token in a header', kind: 'sbx_token', before: 'X-Token: ', secret: SBO, after: '\r\n' },
  {
    name: 'ghp_ in a git remote',
    kind: 'github',
    before: 'https://',
    secret: `ghp_${draw(ALNUM, 36)}`,
    after: '@github.com/o/r.git',
  },
  {
    name: 'gho_ in an env dump',
    kind: 'github',
    before: 'GH_TOKEN=',
    secret: `gho_${draw(ALNUM, 36)}`,
    after: '\n',
  },
  { name: 'ghu_ in JSON', kind: 'github', before: '["', secret: `ghu_${draw(ALNUM, 36)}`, after: '"]' },
  {
    name: 'ghs_ in prose',
    kind: 'github',
    before: 'installation token ',
    secret: `ghs_${draw(ALNUM, 36)}`,
    after: ' expires',
  },
  {
    name: 'ghr_ at the end',
    kind: 'github',
    before: 'refresh: ',
    secret: `ghr_${draw(ALNUM, 36)}`,
    after: '',
  },
  {
    name: 'fine-grained PAT',
    kind: 'github',
    before: 'export GITHUB_TOKEN="',
    secret: `github_pat_${draw(ALNUM, 22)}_${draw(ALNUM, 59)}`,
    after: '"\n',
  },
  {
    name: 'xoxb- in JSON',
    kind: 'slack',
    before: '{"bot_token":"',
    secret: `xoxb-${draw('0123456789', 12)}-${draw('0123456789', 13)}-${draw(ALNUM, 24)}`,
    after: '"}',
  },
  {
    name: 'xoxp- in a URL',
    kind: 'slack',
    before: 'https://slack.com/api/x?token=',
    secret: `xoxp-${draw('0123456789', 12)}-${draw(ALNUM, 32)}`,
    after: '&pretty=1',
  },
  {
    name: 'xapp- app token',
    kind: 'slack',
    before: 'SLACK_APP_TOKEN=',
    secret: `xapp-1-A${draw(UPPER_DIGITS, 10)}-${draw('0123456789', 13)}-${draw(HEX, 64)}`,
    after: '\n',
  },
  { name: 'xoxs- in parentheses', kind: 'slack', before: '(', secret: `xoxs-${draw(ALNUM, 40)}`, after: ')' },
  {
    name: 'sk-proj- in an env dump',
    kind: 'sk_key',
    before: 'OPENAI_API_KEY=',
    secret: `sk-proj-${draw(B64URL, 48)}`,
    after: '\n',
  },
  {
    name: 'sk-ant- in JSON',
    kind: 'sk_key',
    before: '{"x-api-key": "',
    secret: `sk-ant-api03-${draw(B64URL, 93)}AA`,
    after: '"}',
  },
  {
    name: 'sk- in double quotes',
    kind: 'sk_key',
    before: 'api_key="',
    secret: `sk-${draw(ALNUM, 48)}`,
    after: '"',
  },
  {
    name: 'sk- in a Python repr',
    kind: 'sk_key',
    before: "Client(api_key='",
    secret: `sk-${draw(ALNUM, 20)}`,
    after: "')",
  },
  {
    name: 'AKIA in a credentials file',
    kind: 'aws_access_key',
    before: '[default]\naws_access_key_id = ',
    secret: `AKIA${draw(UPPER_DIGITS, 16)}`,
    after: '\n',
  },
  {
    name: 'ASIA in JSON',
    kind: 'aws_access_key',
    before: '{"AccessKeyId":"',
    secret: `ASIA${draw(UPPER_DIGITS, 16)}`,
    after: '"}',
  },
  {
    name: 'Bearer in a curl header',
    kind: 'bearer',
    before: 'curl -H "Authorization: Bearer ',
    secret: OPAQUE,
    after: '" https://x',
  },
  {
    name: 'lower-case bearer',
    kind: 'bearer',
    before: 'authorization: bearer ',
    secret: `${draw(B64URL, 20)}.${draw(B64URL, 8)}`,
    after: '\r\n',
  },
  { name: 'Bearer with a JWT', kind: 'bearer', before: '> Authorization: Bearer ', secret: JWT, after: '\n' },
  {
    name: 'Bearer with padding, at the end',
    kind: 'bearer',
    before: 'BEARER\t',
    secret: `${draw(ALNUM, 30)}+/==`,
    after: '',
  },
];

export const NEAR_MISSES: readonly string[] = [
  'pip install scikit-learn  # imported as sk-learn',
  'sk-1234 is too short to be a key',
  'task-list-item-number-one-two-three-four',
  'a risk-free-rate-of-return-assumption-here',
  'desk-organizer-with-drawers-and-shelves-xl',
  'AKIAPOLO',
  `AKIA${'X'.repeat(15)} (15 characters)`,
  `AKIA${'Y'.repeat(17)} (17 characters)`,
  `XAKIA${'Z'.repeat(16)} (glued to a word)`,
  'akiaiosfodnn7exampleabcd (lower case)',
  'He was the Bearer of bad news.',
  'Bearer bonds are paper.',
  'Bearer: none',
  'eyJ',
  'header only: eyJhbGciOiJIUzI1NiJ9 and a dot.',
  'id 123e4567-e89b-12d3-a456-426614174000',
  'sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  'commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12',
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  `ghp_${'a'.repeat(20)} is too short`,
  'github_pat_short',
  'sbk_notreallyakey and sbo_short',
  'xoxo-hugs and xoxb-123',
  'The quick brown fox jumps over the lazy dog.',
  'const task = tasks.find((t) => t.id === id); // sk- prefix check',
  'https://example.com/path/to/resource?page=2&sort=desc#frag',
  '{"eyJ": 1, "token_type": "bearer", "expires_in": 3600}',
  'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\nValueError: bad\n',
  'héllo wörld — ünïcödé ✓ 😀',
];
