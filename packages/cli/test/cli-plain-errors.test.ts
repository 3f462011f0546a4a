// `sbx` (a real process) where a mistake used to be answered with a symptom (issue 27): each
// message names the cause and what to do, in one line.
import { mkdirSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
let real: RealBroker;
let cli: SbxRunner;
let tenant: string;

const oneLine = (text: string): boolean => text.trimEnd().split('\n').length === 1;

beforeAll(async () => {
  real = await startRealBroker();
  tenant = real.harness.tenantId;
  cli = sbxRunner();
  const key = await real.harness.apiKey({
    scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'],
    principalId: 'usr_keyholder',
    principalType: 'user',
  });
  for (const args of [
    ['login', '--broker', real.harness.url],
    ['ensure', 'thr_plain'],
  ]) {
    const result = await cli.sbx(args, { input: key });
    if (result.code !== 0) throw new Error(`sbx ${args[0] ?? ''} failed: ${result.stderr}`);
  }
}, SLOW);

afterAll(async () => {
  await cli.sbx(['release', 'thr_plain']);
  await real.close();
  cli.close();
}, SLOW);

describe('messages that name the cause', () => {
  it(
    'a wrong key at login says that logging in to the broker failed, not which request did',
    async () => {
      const other = sbxRunner();
      try {
        const result = await other.sbx(['login', '--broker', real.harness.url, '--api-key', 'sbk_not-a-key']);
        expect(result.code).toBe(3);
        expect(oneLine(result.stderr)).toBe(true);
        expect(result.stderr).toMatch(
          new RegExp(`^sbx: logging in to ${real.harness.url}: API key is not valid \\(request \\S+\\)\\n$`),
        );
      } finally {
        other.close();
      }
    },
    SLOW,
  );

  it(
    "whoami and login show the key's principal as the broker reports it, not this machine's user",
    async () => {
      const local = `usr:${userInfo().username}`;
      const text = await cli.sbx(['whoami']);
      // A user key's bindings act as that user (the broker lets it be no other human).
      expect(text).toEqual({
        code: 0,
        stdout: `authenticated to ${real.harness.url} as usr_keyholder (user, tenant ${tenant}); bindings act as usr_keyholder\n`,
        stderr: '',
      });
      expect(text.stdout).not.toContain(local);
      const json = JSON.parse((await cli.sbx(['whoami', '--json'])).stdout) as Record<string, unknown>;
      expect(json).toMatchObject({
        principal: {
          principal_id: 'usr_keyholder',
          principal_type: 'user',
          tenant_id: tenant,
          owner_id: 'usr_keyholder',
          credential: 'api_key',
          scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox', 'attach:sandbox'],
        },
        actor_id: 'usr_keyholder',
        authenticated: true,
      });
      const other = sbxRunner();
      try {
        const service = await other.sbx(['login', '--broker', real.harness.url, '--actor', 'usr:me'], {
          input: real.apiKey,
        });
        expect(service.stdout).toMatch(
          /^logged in to \S+ as principal_\S+ \(service, tenant \S+\); bindings act as usr:me /,
        );
      } finally {
        other.close();
      }
    },
    SLOW,
  );

  it(
    'exec of a whole shell line as one argument hints at sh -c; a missing program alone does not',
    async () => {
      const line = await cli.sbx(['exec', 'thr_plain', '--', `python3 -c "print('it''s')"`]);
      expect(line.code).toBe(127);
      expect(line.stderr.trimEnd().split('\n').at(-1)).toBe(
        `sbx: the command is argv, not a shell line: sbx exec thr_plain -- sh -c 'python3 -c "print('\\''it'\\'''\\''s'\\'')"'`,
      );
      const missing = await cli.sbx(['exec', 'thr_plain', '--', 'no-such-program-sbx']);
      expect(missing.code).toBe(127);
      expect(missing.stderr).not.toContain('not a shell line');
      const quoted = await cli.sbx([
        'exec',
        'thr_plain',
        '--',
        'sh',
        '-c',
        `python3 -c "print(1)" || echo 1`,
      ]);
      expect(quoted).toMatchObject({ code: 0, stdout: '1\n' });
    },
    SLOW,
  );

  it(
    'cp of a directory, or cp -r, is a usage error pointing to sbx sync',
    async () => {
      const dir = path.join(path.dirname(cli.home), 'project');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'a.txt'), 'a\n');
      const directory = await cli.sbx(['cp', dir, 'thr_plain:project']);
      expect(directory).toEqual({
        code: 2,
        stdout: '',
        stderr: `sbx: cp: ${dir} is a directory and cp copies one file: sbx sync ${dir} thr_plain:project copies it\n`,
      });
      const recursive = await cli.sbx(['cp', '-r', dir, 'thr_plain:project']);
      expect(recursive).toEqual({
        code: 2,
        stdout: '',
        stderr:
          'sbx: cp: -r: cp copies one file; for a directory use sbx sync <dir> <thread>:<path> ' +
          '(or sbx sync <thread>:<path> <dir> to fetch one)\n',
      });
      const unknown = await cli.sbx(['ls', '--long', 'thr_plain:']);
      expect(unknown).toMatchObject({ code: 2, stderr: 'sbx: ls: unknown option --long (sbx help)\n' });
    },
    SLOW,
  );
});
