// docs/langgraph.md, run as written: its broker command is what this test starts, its shell
// commands run as they are, its expected output must appear, and its code blocks are the
// example's own code (not a copy that could drift).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { brokerStartSteps, REPO_ROOT, startDeployment, type Deployment } from './deployment.js';

const SLOW = 180_000;
const guide = readFileSync(path.join(REPO_ROOT, 'docs/langgraph.md'), 'utf8');
const blocks = [...guide.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
const ofLang = (lang: string): string[] => blocks.filter((b) => b.lang === lang).map((b) => b.body.trim());
const squash = (s: string): string => s.replace(/\s+/g, ' ').trim();
const readJson = (file: string): { scripts: Record<string, string> } =>
  JSON.parse(readFileSync(path.join(REPO_ROOT, file), 'utf8')) as { scripts: Record<string, string> };
let deployment: Deployment;

function run(script: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.once('exit', (code) => resolve({ code, out }));
  });
}

beforeAll(async () => {
  deployment = await startDeployment();
}, SLOW);

afterAll(async () => {
  await deployment?.close();
}, SLOW);

describe('docs/langgraph.md', () => {
  it('starts the broker with the command the test starts', () => {
    const [start] = ofLang('sh');
    expect(start).toBe('npx -y pnpm@12.4.2 start');
    // `pnpm start` is the broker's own start script, which startDeployment runs as written:
    // the build of its bundle, then its variables and node's arguments.
    expect(readJson('package.json').scripts['start']).toBe('pnpm --filter ./services/broker start');
    const steps = brokerStartSteps();
    expect(steps.map((step) => step.args.at(-1))).toEqual([
      '../../scripts/build-broker.mjs',
      'dist/main.mjs',
    ]);
  });

  it(
    'runs the example end to end and prints what the guide shows',
    async () => {
      const [, exports, command] = ofLang('sh');
      const names = [...exports!.matchAll(/^export (\w+)=/gm)].map((m) => m[1]);
      expect(names).toEqual(['SBX_BROKER_URL', 'SBX_API_KEY']);
      const result = await run(command!, {
        SBX_BROKER_URL: deployment.url,
        SBX_API_KEY: deployment.adminKey,
      });
      expect(result.out).not.toMatch(/Error/);
      expect(result.code).toBe(0);
      const expected = ofLang('text')[1]!.split('\n');
      const workspace = /workspace (\S+)/.exec(result.out)?.[1] ?? '/workspace';
      for (const line of expected) expect(result.out).toContain(line.replace('/workspace', workspace));
    },
    SLOW,
  );

  it('shows code that is the example’s own', () => {
    const example = squash(
      ['graph.ts', 'shared-sandbox.ts']
        .map((f) => readFileSync(path.join(REPO_ROOT, 'examples/langgraph', f), 'utf8'))
        .join('\n'),
    );
    const code = ofLang('ts');
    expect(code.length).toBeGreaterThanOrEqual(3);
    for (const block of code) expect(example).toContain(squash(block));
  });
});
