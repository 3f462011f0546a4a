// `sbx` (a real process) against a broker stand-in (a real HTTP server on port 0) whose
// answers break the protocol: each is one line naming the route, never `sbx: [` (a zod
// issue list), a JSON parser's complaint quoting the body, or a stack. `sbx login` says
// what it was doing (`logging in to <broker>`) before the route's failure.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startScriptedHttp, type ScriptedHttp } from '../../client/test/scripted-http.js';
import { sbxRunner, type SbxRunner } from './support.js';

const KEY = 'sbx_key_4f1a9c';
const PROBE = 'GET /v1/whoami';
/** A pattern matching exactly `text`. */
const exactly = (text: string): RegExp => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
let broker: ScriptedHttp;
let cli: SbxRunner;

beforeAll(async () => {
  broker = await startScriptedHttp({ status: 200, body: '' });
  cli = sbxRunner();
});
afterAll(async () => {
  cli.close();
  await broker.close();
});

const CASES = [
  {
    name: 'a body that is not JSON',
    answer: { status: 200, contentType: 'application/json', body: `{"token":"${KEY}"` },
    line: (url: string) =>
      exactly(`sbx: logging in to ${url}: ${PROBE} answered HTTP 200 with a body that is not JSON`),
  },
  {
    name: 'JSON of the wrong shape',
    answer: { status: 200, contentType: 'application/json', body: JSON.stringify({ session: KEY }) },
    line: (url: string) =>
      new RegExp(
        `^sbx: logging in to ${url}: ${PROBE} answered HTTP 200 with a body that does not match its schema \\(`,
      ),
  },
  {
    name: "a proxy's HTML 502 page",
    answer: { status: 502, contentType: 'text/html', body: `<html><h1>Bad Gateway</h1>${KEY}</html>` },
    line: (url: string) =>
      exactly(
        `sbx: logging in to ${url}: ${PROBE} answered HTTP 502 Bad Gateway (text/html) without an error envelope`,
      ),
  },
] as const;

describe('sbx and answers that break the protocol', () => {
  it.each(CASES)('$name: one line naming the route, exit 1', async ({ answer, line }) => {
    broker.answer = answer;
    const result = await cli.sbx(['login', '--broker', broker.url], { input: KEY });
    expect(result.code).toBe(1);
    expect(result.stderr.endsWith('\n')).toBe(true);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line(broker.url));
    expect(result.stderr).not.toContain(KEY);
  });
});
