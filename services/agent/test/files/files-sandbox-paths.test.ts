import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DirectoryListing, ExecResponse, PathInfo, SandboxInfo, WatchEventFrame } from '@sbx/protocol';
import { SigningKey } from '@sbx/tokens';
import type { AgentContext, AgentFeature } from '../../src/agent-context.js';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { filesFeature } from '../../src/http/files/files-feature.js';
import { AGENT_VERSION } from '../../src/version.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { TestSocket } from '../support/ws-client.js';
import { call } from '../exec/exec-test-kit.js';
import { expectError, jsonOf, send, type RawResponse } from './files-test-kit.js';

/**
 * "One sandbox, one filesystem": the file API names files the way the sandbox's
 * processes do. An absolute path is a sandbox path and must lie in the workspace; a
 * relative one is relative to the workspace; answers give the absolute sandbox path.
 */

const json = { 'content-type': 'application/json' };

/** A name no other test (or run) uses, for paths outside the workspace. */
function unique(prefix: string): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

function upload(agent: TestAgent, target: string, body: string): Promise<RawResponse> {
  return send(agent, {
    method: 'POST',
    path: `/v1/files/upload?path=${encodeURIComponent(target)}`,
    token: agent.token(['fs:rw']),
    body,
  });
}

function download(agent: TestAgent, target: string): Promise<RawResponse> {
  return send(agent, {
    method: 'GET',
    path: `/v1/files/download?path=${encodeURIComponent(target)}`,
    token: agent.token(['fs:ro']),
  });
}

function stat(agent: TestAgent, target: string): Promise<RawResponse> {
  return send(agent, {
    method: 'GET',
    path: `/v1/files/stat?path=${encodeURIComponent(target)}`,
    token: agent.token(['fs:ro']),
  });
}

async function exec(agent: TestAgent, body: Record<string, unknown>): Promise<ExecResponse> {
  const response = await call(agent, agent.token(['process']), 'POST', '/v1/exec', body);
  expect({ status: response.status, body: response.body }).toMatchObject({ status: 200 });
  return ExecResponse.parse(response.body);
}

/** Every name under `dir`, never following a symlink. */
function treeOf(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const name = `${prefix}${entry.name}`;
      return entry.isDirectory() ? [name, ...treeOf(path.join(dir, entry.name), `${name}/`)] : [name];
    })
    .toSorted();
}

function features(ctx: AgentContext): AgentFeature[] {
  return [filesFeature(ctx), execFeature(ctx)];
}

describe('sandbox paths with the direct launcher', () => {
  let agent: TestAgent;
  /** A host file outside the workspace that mutating attempts aim at (never /etc: tests run as root). */
  let victim: string;

  beforeAll(async () => {
    agent = await startTestAgent({ features });
    victim = path.join('/tmp', `${unique('sbx-paths-victim')}.txt`);
    writeFileSync(victim, 'victim: must stay untouched\n');
  });
  afterAll(async () => {
    await agent.close();
    rmSync(victim, { force: true });
  });

  it('sees the workspace at its host path: the sandbox workspace path is the host path', () => {
    expect(agent.sandboxWorkspace).toBe(agent.workspace);
  });

  it('refuses an absolute path outside the workspace with 403 naming the workspace, creating nothing', async () => {
    const rw = agent.token(['fs:rw']);
    const escape = path.join('/tmp', unique('sbx-paths-escape'));
    writeFileSync(path.join(agent.workspace, 'movable.txt'), 'stays');
    const before = treeOf(agent.workspace);
    const attempts: Array<[string, Promise<RawResponse>]> = [
      ['download /etc/passwd', download(agent, '/etc/passwd')],
      ['stat /etc/passwd', stat(agent, '/etc/passwd')],
      ['list /etc', send(agent, { method: 'GET', path: '/v1/files/list?path=/etc', token: rw })],
      ['list /', send(agent, { method: 'GET', path: '/v1/files/list?path=/', token: rw })],
      ['upload /tmp/x', upload(agent, `${escape}/x.txt`, 'pwned')],
      ['upload over a host file', upload(agent, victim, 'pwned')],
      [
        'mkdir -p /tmp/x',
        send(agent, {
          method: 'POST',
          path: '/v1/files/mkdir',
          token: rw,
          headers: json,
          body: JSON.stringify({ path: `${escape}/deep`, parents: true }),
        }),
      ],
      [
        'move a host file in',
        send(agent, {
          method: 'POST',
          path: '/v1/files/move',
          token: rw,
          headers: json,
          body: JSON.stringify({ from: victim, to: 'stolen.txt' }),
        }),
      ],
      [
        'move out to /tmp',
        send(agent, {
          method: 'POST',
          path: '/v1/files/move',
          token: rw,
          headers: json,
          body: JSON.stringify({ from: 'movable.txt', to: `${escape}.txt` }),
        }),
      ],
      [
        'delete a host file',
        send(agent, { method: 'DELETE', path: `/v1/files?path=${encodeURIComponent(victim)}`, token: rw }),
      ],
    ];
    for (const [name, attempt] of attempts) {
      const res = await attempt;
      const message = expectError(res, 'FORBIDDEN', 403);
      expect({ name, message }).toEqual({
        name,
        message: expect.stringContaining(`is outside the workspace ${agent.sandboxWorkspace};`),
      });
      expect(jsonOf(res)).toMatchObject({ error: { details: { workspace: agent.sandboxWorkspace } } });
    }
    expect([existsSync(escape), existsSync(`${escape}.txt`)]).toEqual([false, false]);
    expect(readFileSync(path.join(agent.workspace, 'movable.txt'), 'utf8')).toBe('stays');
    expect(readFileSync(victim, 'utf8')).toBe('victim: must stay untouched\n');
    expect(treeOf(agent.workspace)).toEqual(before);
  });

  it('names one file by a relative path and by the equivalent absolute path', async () => {
    const absolute = `${agent.sandboxWorkspace}/same/file.txt`;
    const created = await upload(agent, 'same/file.txt', 'written relative');
    expect(created.status).toBe(201);
    expect(PathInfo.parse(jsonOf(created)).path).toBe(absolute);
    expect((await download(agent, absolute)).body.toString()).toBe('written relative');

    const replaced = await upload(agent, absolute, 'written absolute');
    expect(replaced.status).toBe(200);
    expect(PathInfo.parse(jsonOf(replaced)).path).toBe(absolute);
    for (const spelling of [
      'same/file.txt',
      './same//file.txt',
      `${agent.sandboxWorkspace}//same/./file.txt`,
    ])
      expect((await download(agent, spelling)).body.toString()).toBe('written absolute');
    expect(readFileSync(path.join(agent.workspace, 'same/file.txt'), 'utf8')).toBe('written absolute');

    const byRelative = PathInfo.parse(jsonOf(await stat(agent, 'same/file.txt')));
    const byAbsolute = PathInfo.parse(jsonOf(await stat(agent, absolute)));
    expect(byRelative).toEqual(byAbsolute);
    expect(byRelative.path).toBe(absolute);
    for (const root of ['.', agent.sandboxWorkspace, `${agent.sandboxWorkspace}/`]) {
      const listing = DirectoryListing.parse(
        jsonOf(
          await send(agent, {
            method: 'GET',
            path: `/v1/files/list?path=${encodeURIComponent(root)}`,
            token: agent.token(['fs:ro']),
          }),
        ),
      );
      expect({ root, path: listing.path }).toEqual({ root, path: agent.sandboxWorkspace });
      expect(listing.entries.map((entry) => entry.name)).toContain('same');
    }
  });

  it('reads the /files/{path} tail relative to the workspace: /files/a.txt is ?path=a.txt', async () => {
    const rw = agent.token(['fs:rw']);
    const put = await send(agent, { method: 'PUT', path: '/files/a.txt', token: rw, body: 'seed route' });
    expect(put.status).toBe(201);
    const info = PathInfo.parse(jsonOf(put));
    expect(info.path).toBe(`${agent.sandboxWorkspace}/a.txt`);
    const viaQuery = await download(agent, 'a.txt');
    expect(viaQuery.body.toString()).toBe('seed route');
    expect(viaQuery.headers.etag).toBe(info.etag);
    expect(PathInfo.parse(jsonOf(await stat(agent, 'a.txt')))).toEqual(info);

    const replaced = await upload(agent, 'a.txt', 'normalized route');
    expect(replaced.status).toBe(200);
    const viaUrl = await send(agent, { method: 'GET', path: '/files/a.txt', token: rw });
    expect(viaUrl.body.toString()).toBe('normalized route');
    expect(viaUrl.headers.etag).toBe(replaced.headers.etag);
    expect((await send(agent, { method: 'GET', path: '/files//a.txt', token: rw })).body.toString()).toBe(
      'normalized route',
    );

    // A URL cannot say "absolute": the workspace's path in the tail is a (missing) directory inside it.
    const doubled = await send(agent, {
      method: 'GET',
      path: `/files${agent.sandboxWorkspace}/a.txt`,
      token: rw,
    });
    expect(expectError(doubled, 'NOT_FOUND', 404)).toBe(
      `${agent.sandboxWorkspace}/${agent.sandboxWorkspace.split('/')[1]} does not exist`,
    );

    expect((await send(agent, { method: 'DELETE', path: '/files/a.txt', token: rw })).status).toBe(204);
    expectError(await stat(agent, 'a.txt'), 'NOT_FOUND', 404);
  });

  it('agrees with exec: HOME and the default cwd are the workspace, files are where exec looks', async () => {
    expect((await upload(agent, 'app/main.py', 'print("hi")\n')).status).toBe(201);
    const seen = await exec(agent, {
      cmd: `pwd; echo "$HOME"; cat ${agent.sandboxWorkspace}/app/main.py; cat app/main.py`,
    });
    expect(seen).toMatchObject({
      exit_code: 0,
      stdout: `${agent.sandboxWorkspace}\n${agent.sandboxWorkspace}\nprint("hi")\nprint("hi")\n`,
    });
    const inApp = await exec(agent, { cmd: 'pwd; cat main.py', cwd: `${agent.sandboxWorkspace}/app` });
    expect(inApp.stdout).toBe(`${agent.sandboxWorkspace}/app\nprint("hi")\n`);
  });

  describe('GET /v1/info', () => {
    it.each([[['fs:ro']], [['shell']], [['process']]])(
      'answers the workspace path to a token with %j, no scope needed',
      async (scopes) => {
        const res = await send(agent, { method: 'GET', path: '/v1/info', token: agent.token(scopes) });
        expect(res.status).toBe(200);
        expect(res.headers['cache-control']).toBe('no-store');
        const expected = {
          sandbox_id: agent.ctx.sandboxId,
          workspace_path: agent.sandboxWorkspace,
          home: agent.sandboxWorkspace,
          version: AGENT_VERSION,
        };
        expect(jsonOf(res)).toEqual(expected);
        expect(SandboxInfo.parse(jsonOf(res))).toEqual(expected);
      },
    );

    it('answers 401 without a valid token of this sandbox', async () => {
      expectError(await send(agent, { method: 'GET', path: '/v1/info' }), 'UNAUTHENTICATED', 401);
      expectError(
        await send(agent, { method: 'GET', path: '/v1/info', token: 'not-a-token' }),
        'UNAUTHENTICATED',
        401,
      );
      const strangers = [
        agent.token(['fs:ro'], { sandboxId: 'sb_other' }),
        agent.token(['fs:ro'], { key: SigningKey.generate() }),
        agent.token(['fs:ro'], { ttlSeconds: 60, issuedSecondsAgo: 120 }),
      ];
      for (const token of strangers) {
        const res = await send(agent, { method: 'GET', path: '/v1/info', token });
        expectError(res, 'UNAUTHENTICATED', 401);
        expect(res.body.toString()).not.toContain(agent.sandboxWorkspace);
      }
    });
  });
});

/** Confinement needs bubblewrap; without it there is no sandbox view to compare with. */
const withBubblewrap = existsSync('/usr/bin/bwrap') ? describe : describe.skip;

withBubblewrap('sandbox paths in a bubblewrap sandbox (workspace at /workspace)', () => {
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await startTestAgent({ confined: { network: false }, features });
  });
  afterAll(async () => {
    await agent.close();
  });

  it('answers /workspace in /v1/info and in every PathInfo', async () => {
    expect(agent.sandboxWorkspace).toBe('/workspace');
    const info = SandboxInfo.parse(
      jsonOf(await send(agent, { method: 'GET', path: '/v1/info', token: agent.token(['shell']) })),
    );
    expect(info).toMatchObject({ workspace_path: '/workspace', home: '/workspace' });
    const root = PathInfo.parse(jsonOf(await stat(agent, '.')));
    expect(root).toMatchObject({ path: '/workspace', type: 'dir' });
  });

  it('lets exec read what the file API wrote at /workspace/app/main.py, by absolute and relative path', async () => {
    const created = await upload(agent, '/workspace/app/main.py', 'print("from the file API")\n');
    expect(created.status).toBe(201);
    expect(PathInfo.parse(jsonOf(created)).path).toBe('/workspace/app/main.py');
    expect(readFileSync(path.join(agent.workspace, 'app/main.py'), 'utf8')).toBe(
      'print("from the file API")\n',
    );
    const absolute = await exec(agent, { argv: ['cat', '/workspace/app/main.py'] });
    expect(absolute).toMatchObject({ exit_code: 0, stdout: 'print("from the file API")\n' });
    const relative = await exec(agent, { cmd: 'pwd; cat app/main.py' });
    expect(relative).toMatchObject({ exit_code: 0, stdout: '/workspace\nprint("from the file API")\n' });
    for (const cwd of ['app', '/workspace/app']) {
      const inApp = await exec(agent, { cmd: 'pwd; cat main.py', cwd });
      expect({ cwd, stdout: inApp.stdout }).toEqual({
        cwd,
        stdout: '/workspace/app\nprint("from the file API")\n',
      });
    }
  });

  it('lets the file API read what exec wrote to $HOME/x at x', async () => {
    const wrote = await exec(agent, { cmd: 'echo "$HOME"; echo "from exec" > "$HOME/x"' });
    expect(wrote).toMatchObject({ exit_code: 0, stdout: '/workspace\n' });
    for (const spelling of ['x', '/workspace/x'])
      expect((await download(agent, spelling)).body.toString()).toBe('from exec\n');
    const seed = await send(agent, { method: 'GET', path: '/files/x', token: agent.token(['fs:ro']) });
    expect(seed.body.toString()).toBe('from exec\n');
    expect(PathInfo.parse(jsonOf(await stat(agent, 'x')))).toMatchObject({ path: '/workspace/x', size: 10 });
  });

  it("keeps the sandbox's /tmp from one exec to the next, apart from the host's and out of the file API", async () => {
    const name = `/tmp/${unique('sbx-paths-tmp')}`;
    expect((await exec(agent, { cmd: `echo kept > ${name}` })).exit_code).toBe(0);
    expect(await exec(agent, { argv: ['cat', name] })).toMatchObject({ exit_code: 0, stdout: 'kept\n' });
    expect(existsSync(name)).toBe(false);
    expect(expectError(await download(agent, name), 'FORBIDDEN', 403)).toContain(
      `${name} is outside the workspace /workspace`,
    );
  });

  it('never remaps a path: the host path of the workspace is outside /workspace', async () => {
    writeFileSync(path.join(agent.workspace, 'host.txt'), 'x');
    const res = await download(agent, path.join(agent.workspace, 'host.txt'));
    expect(expectError(res, 'FORBIDDEN', 403)).toContain('is outside the workspace /workspace');
    const cwd = await call(agent, agent.token(['process']), 'POST', '/v1/exec', {
      argv: ['pwd'],
      cwd: '/tmp',
    });
    expect(cwd).toMatchObject({
      status: 403,
      body: { error: { code: 'FORBIDDEN', message: expect.stringContaining('/workspace') } },
    });
  });

  it('follows an absolute symlink made by exec (/workspace/data.txt) through the file API', async () => {
    expect((await upload(agent, 'data.txt', 'the data')).status).toBe(201);
    const made = await exec(agent, { cmd: 'ln -s /workspace/data.txt link && readlink link' });
    expect(made).toMatchObject({ exit_code: 0, stdout: '/workspace/data.txt\n' });
    expect((await download(agent, 'link')).body.toString()).toBe('the data');
    const seed = await send(agent, { method: 'GET', path: '/files/link', token: agent.token(['fs:ro']) });
    expect(seed.body.toString()).toBe('the data');
    const listing = DirectoryListing.parse(
      jsonOf(
        await send(agent, { method: 'GET', path: '/v1/files/list?path=.', token: agent.token(['fs:ro']) }),
      ),
    );
    expect(listing.entries.find((entry) => entry.name === 'link')).toMatchObject({ type: 'symlink' });
    // Written through the link, the target changes, as a process of the sandbox would see it.
    expect((await upload(agent, 'link', 'new data')).status).toBe(200);
    expect(await exec(agent, { argv: ['cat', 'data.txt'] })).toMatchObject({ stdout: 'new data' });
    expect(readFileSync(path.join(agent.workspace, 'data.txt'), 'utf8')).toBe('new data');
  });

  it('refuses symlinks made by exec that leave the workspace (403), touching nothing', async () => {
    const hostVictim = path.join('/tmp', `${unique('sbx-paths-link-victim')}.txt`);
    const made = await exec(agent, {
      cmd: [
        'ln -s /etc/passwd evil',
        'ln -s /etc evil-dir',
        'ln -s ../../etc/passwd climb',
        `ln -s ${hostVictim} evil-tmp`,
        'cat evil >/dev/null && echo READABLE-INSIDE',
      ].join(' && '),
    });
    expect(made).toMatchObject({ exit_code: 0, stdout: 'READABLE-INSIDE\n' });
    const ro = agent.token(['fs:ro']);
    for (const link of ['evil', 'evil-dir/passwd', 'climb', 'evil-tmp']) {
      for (const res of [
        await download(agent, link),
        await send(agent, { method: 'GET', path: `/files/${link}`, token: ro }),
        await stat(agent, link),
      ]) {
        const message = expectError(res, 'FORBIDDEN', 403);
        expect({ link, message }).toEqual({ link, message: expect.stringMatching(/outside the workspace/) });
        expect(res.body.toString()).not.toContain('root:');
      }
    }
    // Writes aim at a host file in /tmp, never at /etc: a broken guard must not be able to hurt the host.
    expectError(await upload(agent, 'evil-tmp', 'pwned'), 'FORBIDDEN', 403);
    expectError(
      await send(agent, {
        method: 'PUT',
        path: '/files/evil-tmp',
        token: agent.token(['fs:rw']),
        body: 'pwned',
      }),
      'FORBIDDEN',
      403,
    );
    expect(existsSync(hostVictim)).toBe(false);
  });

  it('reports changes made by processes under their /workspace paths to a watcher', async () => {
    const socket = await TestSocket.authed(`${agent.wsUrl}/v1/files/watch`, agent.token(['fs:ro']));
    try {
      socket.send({ type: 'start', path: '/workspace', recursive: true });
      await socket.next((frame) => frame['type'] === 'ready');
      expect((await exec(agent, { cmd: 'mkdir -p watched && echo w > watched/by-exec.txt' })).exit_code).toBe(
        0,
      );
      const created = await socket.next(
        (frame) => frame['type'] === 'event' && frame['path'] === '/workspace/watched/by-exec.txt',
      );
      expect(WatchEventFrame.parse(created)).toMatchObject({ event: 'create', kind: 'file' });
      const paths = socket.frames.filter((frame) => frame['type'] === 'event').map((frame) => frame['path']);
      for (const reported of paths) expect(String(reported)).toMatch(/^\/workspace\//);
    } finally {
      socket.close();
      await socket.closed;
    }
  });
});
