import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';
import { expectError, send, startFilesAgent, type RawRequest } from './files-test-kit.js';

let agent: TestAgent;
let serial = 0;

function inWorkspace(relative: string): string {
  return path.join(agent.workspace, relative);
}

interface RouteCase {
  readonly name: string;
  readonly scope: 'fs:ro' | 'fs:rw';
  readonly ok: number;
  /** Prepares what the request needs and returns it (no credentials). */
  readonly request: (n: number) => Omit<RawRequest, 'token'>;
  /** For writes: whether request `n` changed the workspace. */
  readonly changed?: (n: number) => boolean;
}

const json = { 'content-type': 'application/json' };
function touch(relative: string): void {
  writeFileSync(inWorkspace(relative), 'x');
}

const ROUTES: readonly RouteCase[] = [
  {
    name: 'GET /files/{path}',
    scope: 'fs:ro',
    ok: 200,
    request: () => ({ method: 'GET', path: '/files/scoped/read.txt' }),
  },
  {
    name: 'GET /files/{dir}',
    scope: 'fs:ro',
    ok: 200,
    request: () => ({ method: 'GET', path: '/files/scoped' }),
  },
  {
    name: 'GET /v1/files/download',
    scope: 'fs:ro',
    ok: 200,
    request: () => ({ method: 'GET', path: '/v1/files/download?path=scoped/read.txt' }),
  },
  {
    name: 'GET /v1/files/stat',
    scope: 'fs:ro',
    ok: 200,
    request: () => ({ method: 'GET', path: '/v1/files/stat?path=scoped/read.txt' }),
  },
  {
    name: 'GET /v1/files/list',
    scope: 'fs:ro',
    ok: 200,
    request: () => ({ method: 'GET', path: '/v1/files/list?path=scoped' }),
  },
  {
    name: 'PUT /files/{path}',
    scope: 'fs:rw',
    ok: 201,
    request: (n) => ({ method: 'PUT', path: `/files/scoped/put-${n}.txt`, body: 'data' }),
    changed: (n) => existsSync(inWorkspace(`scoped/put-${n}.txt`)),
  },
  {
    name: 'POST /v1/files/upload',
    scope: 'fs:rw',
    ok: 201,
    request: (n) => ({ method: 'POST', path: `/v1/files/upload?path=scoped/up-${n}.txt`, body: 'data' }),
    changed: (n) => existsSync(inWorkspace(`scoped/up-${n}.txt`)),
  },
  {
    name: 'DELETE /files/{path}',
    scope: 'fs:rw',
    ok: 204,
    request: (n) => (touch(`scoped/del-${n}.txt`), { method: 'DELETE', path: `/files/scoped/del-${n}.txt` }),
    changed: (n) => !existsSync(inWorkspace(`scoped/del-${n}.txt`)),
  },
  {
    name: 'DELETE /v1/files',
    scope: 'fs:rw',
    ok: 204,
    request: (n) => (
      touch(`scoped/vdel-${n}.txt`),
      { method: 'DELETE', path: `/v1/files?path=scoped/vdel-${n}.txt` }
    ),
    changed: (n) => !existsSync(inWorkspace(`scoped/vdel-${n}.txt`)),
  },
  {
    name: 'POST /v1/files/mkdir',
    scope: 'fs:rw',
    ok: 201,
    request: (n) => ({
      method: 'POST',
      path: '/v1/files/mkdir',
      headers: json,
      body: JSON.stringify({ path: `scoped/dir-${n}` }),
    }),
    changed: (n) => existsSync(inWorkspace(`scoped/dir-${n}`)),
  },
  {
    name: 'POST /v1/files/move',
    scope: 'fs:rw',
    ok: 200,
    request: (n) => (
      touch(`scoped/mv-${n}.txt`),
      {
        method: 'POST',
        path: '/v1/files/move',
        headers: json,
        body: JSON.stringify({ from: `scoped/mv-${n}.txt`, to: `scoped/moved-${n}.txt` }),
      }
    ),
    changed: (n) => !existsSync(inWorkspace(`scoped/mv-${n}.txt`)),
  },
];

beforeAll(async () => {
  agent = await startFilesAgent();
  mkdirSync(inWorkspace('scoped'));
  touch('scoped/read.txt');
});
afterAll(async () => {
  await agent.close();
});

describe.each(ROUTES)('$name (needs $scope)', (route) => {
  async function attempt(
    scopes: string[] | undefined,
  ): Promise<{ res: Awaited<ReturnType<typeof send>>; n: number }> {
    const n = ++serial;
    const request = route.request(n);
    const res = await send(agent, {
      ...request,
      ...(scopes === undefined ? {} : { token: agent.token(scopes) }),
    });
    return { res, n };
  }

  it('401 without a token, changing nothing', async () => {
    const { res, n } = await attempt(undefined);
    expectError(res, 'UNAUTHENTICATED', 401);
    expect(route.changed?.(n) ?? false).toBe(false);
  });

  it('403 CAPABILITY_DENIED with unrelated scopes, changing nothing', async () => {
    const { res, n } = await attempt(['shell', 'process']);
    expectError(res, 'CAPABILITY_DENIED', 403);
    expect(route.changed?.(n) ?? false).toBe(false);
  });

  if (route.scope === 'fs:rw') {
    it('403 CAPABILITY_DENIED with fs:ro only, changing nothing', async () => {
      const { res, n } = await attempt(['fs:ro']);
      expectError(res, 'CAPABILITY_DENIED', 403);
      expect(route.changed?.(n)).toBe(false);
    });
  }

  it.each([[route.scope], ['fs:rw']])('succeeds with %s', async (scope) => {
    const { res, n } = await attempt([scope]);
    expect(res.status).toBe(route.ok);
    expect(route.changed?.(n) ?? true).toBe(true);
  });
});

describe('scope before path', () => {
  it.each([
    ['GET', '/v1/files/download?path=/etc/passwd', ['shell']],
    ['GET', '/v1/files/stat?path=/etc/passwd', ['shell']],
    ['POST', '/v1/files/upload?path=/tmp/scoped-escape.txt', ['fs:ro']],
    ['DELETE', '/v1/files?path=/etc/passwd', ['fs:ro']],
  ])('%s %s without the scope is CAPABILITY_DENIED, not a path answer', async (method, route, scopes) => {
    const res = await send(agent, {
      method,
      path: route,
      token: agent.token(scopes),
      ...(method === 'POST' ? { body: 'x' } : {}),
    });
    expect(expectError(res, 'CAPABILITY_DENIED', 403)).not.toContain(agent.sandboxWorkspace);
    expect(existsSync('/tmp/scoped-escape.txt')).toBe(false);
  });
});

describe('WS /v1/files/watch', () => {
  it('refuses a token without fs:ro (1008 with CAPABILITY_DENIED)', async () => {
    const socket = await TestSocket.authed(`${agent.wsUrl}/v1/files/watch`, agent.token(['shell']));
    expect(socket.frames[0]).toMatchObject({ type: 'error', error: { code: 'CAPABILITY_DENIED' } });
    expect((await socket.closed).code).toBe(1008);
  });

  it.each([['fs:ro'], ['fs:rw']])('accepts %s', async (scope) => {
    const socket = await TestSocket.authed(`${agent.wsUrl}/v1/files/watch`, agent.token([scope]));
    socket.send({ type: 'start', path: 'scoped' });
    expect(await socket.next((frame) => frame['type'] !== 'auth_ok')).toEqual({ type: 'ready' });
    socket.close();
    await socket.closed;
  });
});
