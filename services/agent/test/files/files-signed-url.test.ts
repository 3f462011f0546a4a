import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { signFileUrl, SigningKey, type FileUrlOperation } from '@sbx/tokens';
import type { TestAgent } from '../support/agent-harness.js';
import { expectError, send, startFilesAgent } from './files-test-kit.js';

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
    const query = signed({ op: 'GET', path: 'shared/report.txt' });
    const seed = await send(agent, { method: 'GET', path: `/files/shared/report.txt?${query}` });
    expect(seed.status).toBe(200);
    expect(seed.body.toString()).toBe('the report');
    const normalized = await send(agent, {
      method: 'GET',
      path: `/v1/files/download?path=/shared/report.txt&${query}`,
    });
    expect(normalized.body.toString()).toBe('the report');
  });

  it('uploads with a signed PUT, on both routes', async () => {
    const query = signed({ op: 'PUT', path: '/shared/upload.txt' });
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

  it.each([
    [
      'expired',
      () =>
        signed({ op: 'GET', path: 'shared/report.txt', ttlSeconds: 60, now: () => Date.now() - 3_600_000 }),
      /expired/,
    ],
    [
      'signed for another sandbox',
      () => signed({ op: 'GET', path: 'shared/report.txt', sandboxId: 'sb_other' }),
      /does not match/,
    ],
    [
      'signed with another key',
      () => signed({ op: 'GET', path: 'shared/report.txt', key: SigningKey.generate() }),
      /does not match/,
    ],
    ['signed for another path', () => signed({ op: 'GET', path: 'shared/other.txt' }), /does not match/],
    [
      'living longer than allowed',
      () => signed({ op: 'GET', path: 'shared/report.txt', ttlSeconds: 3600 }),
      /too long/,
    ],
    [
      'tampered with',
      () =>
        signed({ op: 'GET', path: 'shared/report.txt' }).replace(
          /sig=(.)/,
          (_m, c: string) => `sig=${c === 'A' ? 'B' : 'A'}`,
        ),
      /does not match/,
    ],
    [
      'missing exp',
      () => signed({ op: 'GET', path: 'shared/report.txt' }).replace(/&exp=\d+/, ''),
      /lacks sig or exp/,
    ],
  ])('refuses a GET URL %s with 401', async (_name, query, message) => {
    const res = await send(agent, { method: 'GET', path: `/files/shared/report.txt?${query()}` });
    expect(expectError(res, 'UNAUTHENTICATED', 401)).toMatch(message);
  });

  it('does not let a signed GET write, nor a signed PUT read', async () => {
    const read = signed({ op: 'GET', path: 'shared/new.txt' });
    expectError(
      await send(agent, { method: 'PUT', path: `/files/shared/new.txt?${read}`, body: 'x' }),
      'UNAUTHENTICATED',
      401,
    );
    expect(existsSync(path.join(agent.workspace, 'shared/new.txt'))).toBe(false);
    const write = signed({ op: 'PUT', path: 'shared/report.txt' });
    expectError(
      await send(agent, { method: 'GET', path: `/files/shared/report.txt?${write}` }),
      'UNAUTHENTICATED',
      401,
    );
  });

  it('refuses a signature on every route that does not take one, changing nothing', async () => {
    const query = signed({ op: 'PUT', path: 'shared/report.txt' });
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
    const query = signed({ op: 'GET', path: 'shared/report.txt' });
    await send(agent, { method: 'GET', path: `/files/shared/report.txt?${query}` });
    const sig = /sig=([^&]+)/.exec(query)?.[1] ?? 'missing';
    expect(agent.logs.join('\n')).not.toContain(sig);
  });
});
