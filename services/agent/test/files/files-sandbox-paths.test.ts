import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DirectoryListing, ExecResponse, PathInfo, SandboxInfo } from '@sbx/protocol';
import { SigningKey } from '@sbx/tokens';
import type { AgentContext, AgentFeature } from '../../src/agent-context.js';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { filesFeature } from '../../src/http/files/files-feature.js';
import { AGENT_VERSION } from '../../src/version.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { call } from '../exec/exec-test-kit.js';
import { expectError, jsonOf, NOT_SERVED, send, treeOf, type RawResponse } from './files-test-kit.js';

/**
 * "One sandbox, one filesystem": the file API names files the way the sandbox's
 * processes do. An absolute path is the sandbox's own, wherever it is (only /proc and
 * the agent's own files are refused); a relative one is relative to the workspace;
 * answers give the absolute path. With the direct launcher, processes see the host's
 * filesystem, so the workspace's sandbox path is its host path. (Where a bubblewrap
 * sandbox sees the workspace at /workspace, the broker's tests of the local provider
 * check the same agreement.)
 */

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

function features(ctx: AgentContext): AgentFeature[] {
  return [filesFeature(ctx), execFeature(ctx)];
}

describe('sandbox paths with the direct launcher', () => {
  let agent: TestAgent;
  /** A fresh directory outside the workspace (never a system path: the tests run as root). */
  let outside: string;

  beforeAll(async () => {
    agent = await startTestAgent({ features });
    outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-paths-outside-')));
  });
  afterAll(async () => {
    await agent.close();
    rmSync(outside, { recursive: true, force: true });
  });

  it('sees the workspace at its host path: the sandbox workspace path is the host path', () => {
    expect(agent.sandboxWorkspace).toBe(agent.workspace);
  });

  it('names a path outside the workspace as exec does, never remapping it into the workspace', async () => {
    const before = treeOf(agent.workspace);
    const fromApi = await upload(agent, `${outside}/by-api/x.txt`, 'written by the file API');
    expect(fromApi.status).toBe(201);
    expect(PathInfo.parse(jsonOf(fromApi)).path).toBe(`${outside}/by-api/x.txt`);
    const seen = await exec(agent, {
      cmd: `cat ${outside}/by-api/x.txt; echo from exec > ${outside}/by-exec.txt`,
    });
    expect(seen).toMatchObject({ exit_code: 0, stdout: 'written by the file API' });
    expect((await download(agent, `${outside}/by-exec.txt`)).body.toString()).toBe('from exec\n');
    const inThere = await exec(agent, { cmd: 'pwd; cat by-exec.txt', cwd: outside });
    expect(inThere.stdout).toBe(`${outside}\nfrom exec\n`);
    expect(treeOf(agent.workspace)).toEqual(before);
  });

  it("refuses /proc, the agent's own, which exec reads as the process's own", async () => {
    for (const res of [await download(agent, '/proc/self/status'), await stat(agent, '/proc/self/status')])
      expect(expectError(res, 'FORBIDDEN', 403)).toMatch(NOT_SERVED);
    expect(await exec(agent, { cmd: 'grep -c ^Pid: /proc/self/status' })).toMatchObject({
      exit_code: 0,
      stdout: '1\n',
    });
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
