import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { signFileUrl, SigningKey, type FileUrlOperation } from '@sbx/tokens';
import type { TestAgent } from '../support/agent-harness.js';
import { expectError, NOT_SERVED, send, startFilesAgent } from './files-test-kit.js';

let agent: TestAgent;

beforeAll(async () => {
  agent = await startFilesAgent();
  mkdirSync(path.join(agent.workspace, 'shared'));
  writeFileSync(path.join(agent.workspace, 'shared/report.txt'), 'the report');
});
afterAll(async () => {
  await agent.close();
});

interface SignOptions {
  readonly op: FileUrlOperation;
  readonly path: string;
  readonly ttlSeconds?: number;
  readonly sandboxId?: string;
  readonly key?: SigningKey;
  readonly now?: () => number;
}

/** The canonical name a signature covers: the absolute sandbox path (`target.display`). */
function sb(relative: string): string {
  return `${agent.sandboxWorkspace}/${relative}`;
}

/** Signs `options.path` exactly as given (tests pass `sb(…)` unless the spelling is the point). */
function signed(options: SignOptions): string {
  const { sig, exp } = signFileUrl({
    key: options.key ?? agent.key,
    sandboxId: options.sandboxId ?? agent.ctx.sandboxId,
    op: options.op,
    path: options.path,
    ttlSeconds: options.ttlSeconds ?? 300,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  return `sig=${sig}&exp=${exp}`;
}

describe('signed file URLs', () => {
  it('downloads with a signed GET and no bearer token, on both routes', async () => {
    const query = signed({ op: 'GET', path: sb('shared/report.txt') });
    const seed = await send(agent, { method: 'GET', path: `/files/shared/report.txt?${query}` });
    expect(seed.status).toBe(200);
    expect(seed.body.toString()).toBe('the report');
    const normalized = await send(agent, {
      method: 'GET',
      path: `/v1/files/download?path=shared/report.txt&${query}`,
    });
    expect(normalized.body.toString()).toBe('the report');
  });

  it('uploads with a signed PUT, on both routes', async () => {
    const query = signed({ op: 'PUT', path: sb('shared/upload.txt') });
    expect(
      (await send(agent, { method: 'PUT', path: `/files/shared/upload.txt?${query}`, body: 'one' })).status,
    ).toBe(201);
    const again = await send(agent, {
      method: 'POST',
      path: `/v1/files/upload?path=shared/upload.txt&${query}`,
      body: 'two',
    });
    expect(again.status).toBe(200);
    expect(readFileSync(path.join(agent.workspace, 'shared/upload.txt'), 'utf8')).toBe('two');
  });

  it('covers the canonical absolute path: every spelling of it on either route uses one signature', async () => {
    const query = signed({ op: 'GET', path: sb('shared/report.txt') });
    const absolute = encodeURIComponent(sb('shared/report.txt'));
    for (const route of [
      `/files/shared/report.txt?${query}`,
      `/files//shared//report.txt?${query}`,
      `/files/./shared/report.txt?${query}`,
      `/v1/files/download?path=shared/report.txt&${query}`,
      `/v1/files/download?path=./shared//report.txt&${query}`,
      `/v1/files/download?path=${absolute}&${query}`,
    ]) {
      const res = await send(agent, { method: 'GET', path: route });
      expect({ route, status: res.status, body: res.body.toString() }).toEqual({
        route,
        status: 200,
        body: 'the report',
      });
    }
  });

  it.each([
    ['the relative form', 'shared/report.txt'],
    ['the old workspace-rooted form', '/shared/report.txt'],
  ])('refuses a URL signed for %s of the path (401)', async (_name, signedPath) => {
    const query = signed({ op: 'GET', path: signedPath });
    for (const route of [
      `/files/shared/report.txt?${query}`,
      `/v1/files/download?path=shared/report.txt&${query}`,
    ]) {
      const res = await send(agent, { method: 'GET', path: route });
      expect(expectError(res, 'UNAUTHENTICATED', 401)).toMatch(/does not match/);
    }
  });

  it('works wherever its path is: a URL signed for a path outside the workspace reads and writes there', async () => {
    const outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-signed-outside-')));
    try {
      writeFileSync(path.join(outside, 'shared.txt'), 'outside the workspace');
      const read = signed({ op: 'GET', path: `${outside}/shared.txt` });
      const download = await send(agent, {
        method: 'GET',
        path: `/v1/files/download?path=${encodeURIComponent(`${outside}/shared.txt`)}&${read}`,
      });
      expect({ status: download.status, body: download.body.toString() }).toEqual({
        status: 200,
        body: 'outside the workspace',
      });
      // The URL tail is relative: /files/<outside>/shared.txt is inside the workspace, not what was signed.
      const seed = await send(agent, { method: 'GET', path: `/files${outside}/shared.txt?${read}` });
      expect(expectError(seed, 'UNAUTHENTICATED', 401)).toMatch(/does not match/);

      const write = signed({ op: 'PUT', path: `${outside}/uploaded.txt` });
      const upload = await send(agent, {
        method: 'POST',
        path: `/v1/files/upload?path=${encodeURIComponent(`${outside}/uploaded.txt`)}&${write}`,
        body: 'signed upload',
      });
      expect(upload.status).toBe(201);
      expect(readFileSync(path.join(outside, 'uploaded.txt'), 'utf8')).toBe('signed upload');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('never serves /proc, even signed for it: the guard refuses it (403) after the signature is checked', async () => {
    const read = signed({ op: 'GET', path: '/proc/self/status' });
    const download = await send(agent, {
      method: 'GET',
      path: `/v1/files/download?path=/proc/self/status&${read}`,
    });
    expect(expectError(download, 'FORBIDDEN', 403)).toMatch(NOT_SERVED);
    expect(download.body.toString()).not.toContain('Pid:');
    const write = signed({ op: 'PUT', path: '/proc/self/comm' });
    const upload = await send(agent, {
      method: 'POST',
      path: `/v1/files/upload?path=/proc/self/comm&${write}`,
      body: 'pwned',
    });
    expect(expectError(upload, 'FORBIDDEN', 403)).toMatch(NOT_SERVED);
    expect(readFileSync('/proc/self/comm', 'utf8')).not.toContain('pwned');
    // Unsigned for it, the same path is still only a bad signature (401), never an answer about /proc.
    const other = signed({ op: 'GET', path: '/proc/self/environ' });
    const unsigned = await send(agent, {
      method: 'GET',
      path: `/v1/files/download?path=/proc/self/status&${other}`,
    });
    expect(expectError(unsigned, 'UNAUTHENTICATED', 401)).toMatch(/does not match/);
  });

  it.each([
    [
      'expired',
      () =>
        signed({
          op: 'GET',
          path: sb('shared/report.txt'),
          ttlSeconds: 60,
          now: () => Date.now() - 3_600_000,
        }),
      /expired/,
    ],
    [
      'signed for another sandbox',
      () => signed({ op: 'GET', path: sb('shared/report.txt'), sandboxId: 'sb_other' }),
      /does not match/,
    ],
    [
      'signed with another key',
      () => signed({ op: 'GET', path: sb('shared/report.txt'), key: SigningKey.generate() }),
      /does not match/,
    ],
    ['signed for another path', () => signed({ op: 'GET', path: sb('shared/other.txt') }), /does not match/],
    [
      'living longer than allowed',
      () => signed({ op: 'GET', path: sb('shared/report.txt'), ttlSeconds: 3600 }),
      /too long/,
    ],
    [
      'tampered with',
      () =>
        signed({ op: 'GET', path: sb('shared/report.txt') }).replace(
          /sig=(.)/,
          (_m, c: string) => `sig=${c === 'A' ? 'B' : 'A'}`,
        ),
      /does not match/,
    ],
    [
      'missing exp',
      () => signed({ op: 'GET', path: sb('shared/report.txt') }).replace(/&exp=\d+/, ''),
      /lacks sig or exp/,
    ],
  ])('refuses a GET URL %s with 401', async (_name, query, message) => {
    const res = await send(agent, { method: 'GET', path: `/files/shared/report.txt?${query()}` });
    expect(expectError(res, 'UNAUTHENTICATED', 401)).toMatch(message);
  });

  it('does not let a signed GET write, nor a signed PUT read', async () => {
    const read = signed({ op: 'GET', path: sb('shared/new.txt') });
    expectError(
      await send(agent, { method: 'PUT', path: `/files/shared/new.txt?${read}`, body: 'x' }),
      'UNAUTHENTICATED',
      401,
    );
    expect(existsSync(path.join(agent.workspace, 'shared/new.txt'))).toBe(false);
    const write = signed({ op: 'PUT', path: sb('shared/report.txt') });
    expectError(
      await send(agent, { method: 'GET', path: `/files/shared/report.txt?${write}` }),
      'UNAUTHENTICATED',
      401,
    );
  });

  it('refuses a signature on every route that does not take one, changing nothing', async () => {
    const query = signed({ op: 'PUT', path: sb('shared/report.txt') });
    const json = { 'content-type': 'application/json' };
    const attempts = [
      send(agent, { method: 'DELETE', path: `/files/shared/report.txt?${query}` }),
      send(agent, { method: 'DELETE', path: `/v1/files?path=shared/report.txt&${query}` }),
      send(agent, { method: 'GET', path: `/v1/files/stat?path=shared/report.txt&${query}` }),
      send(agent, { method: 'GET', path: `/v1/files/list?path=shared&${query}` }),
      send(agent, {
        method: 'POST',
        path: `/v1/files/mkdir?${query}`,
        headers: json,
        body: '{"path":"shared/dir"}',
      }),
      send(agent, {
        method: 'POST',
        path: `/v1/files/move?${query}`,
        headers: json,
        body: '{"from":"shared/report.txt","to":"x"}',
      }),
      send(agent, { method: 'GET', path: `/v1/something-else?${query}` }),
    ];
    for (const res of await Promise.all(attempts))
      expect(expectError(res, 'UNAUTHENTICATED', 401)).toMatch(/signed URLs/);
    expect(readFileSync(path.join(agent.workspace, 'shared/report.txt'), 'utf8')).toBe('the report');
    expect(existsSync(path.join(agent.workspace, 'shared/dir'))).toBe(false);
  });

  it('never writes a signature into the logs', async () => {
    const query = signed({ op: 'GET', path: sb('shared/report.txt') });
    await send(agent, { method: 'GET', path: `/files/shared/report.txt?${query}` });
    const sig = /sig=([^&]+)/.exec(query)?.[1] ?? 'missing';
    expect(agent.logs.join('\n')).not.toContain(sig);
  });
});
