import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ExecResponse } from '@sbx/protocol';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { filesFeature } from '../../src/http/files/files-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { call } from '../exec/exec-test-kit.js';
import {
  expectError,
  FILE_OPERATION_NAMES,
  fileOperations,
  NOT_SERVED,
  SANDBOX_PATH_OPERATION_NAMES,
  treeOf,
  uploadTemporaries,
  type FileOperation,
  type FileOperationName,
} from './files-test-kit.js';

/**
 * The agent's private paths (its code, or the paths hidden from the sandbox:
 * `confined.hidePaths` here) are refused like /proc, by their own name and by every
 * symlink that leads there, with every operation, and nothing in them changes. A
 * sibling whose name merely starts with a private path's is an ordinary path.
 */

/** Hidden paths need a bubblewrap sandbox, the only place they are hidden from. */
const withBubblewrap = existsSync('/usr/bin/bwrap') ? describe : describe.skip;

interface PrivateCase {
  readonly name: string;
  readonly raw: () => string;
}

let agent: TestAgent;
let operations: Record<FileOperationName, FileOperation>;
/** The hidden directory: `secret.txt`, `sub/inner.txt`. */
let hidden: string;
let secretMtimeMs: number;

/** Symlinks in the workspace, each leading into the hidden directory its own way. */
const BY_LINK: readonly PrivateCase[] = [
  { name: 'a final symlink to a private file', raw: () => 'priv-file' },
  { name: 'a final symlink to the private directory', raw: () => 'priv-dir' },
  { name: 'an intermediate symlink into it', raw: () => 'priv-dir/sub/inner.txt' },
  { name: 'a broken symlink into it', raw: () => 'priv-broken' },
  { name: 'a relative symlink climbing into it', raw: () => 'priv-climb' },
  { name: 'a chain of symlinks, the last one climbing with ".."', raw: () => 'priv-chain' },
];

/** The hidden directory named directly, for the operations whose path may be absolute. */
const BY_NAME: readonly PrivateCase[] = [
  { name: 'the private directory', raw: () => encodeURIComponent(hidden) },
  { name: 'a file in it', raw: () => encodeURIComponent(`${hidden}/secret.txt`) },
  { name: 'a nested file in it', raw: () => encodeURIComponent(`${hidden}/sub/inner.txt`) },
  { name: 'a missing path in it', raw: () => encodeURIComponent(`${hidden}/new.txt`) },
];

function privateState(): Record<string, unknown> {
  return {
    tree: treeOf(hidden),
    secret: readFileSync(path.join(hidden, 'secret.txt'), 'utf8'),
    inner: readFileSync(path.join(hidden, 'sub/inner.txt'), 'utf8'),
    mtimeMs: statSync(path.join(hidden, 'secret.txt')).mtimeMs,
  };
}

function workspaceState(): Record<string, unknown> {
  const ws = agent.workspace;
  const links = ['priv-file', 'priv-dir', 'priv-broken', 'priv-climb', 'priv-chain', 'priv-hop'];
  return {
    links: links.map((name) => readlinkSync(path.join(ws, name))),
    ok: readFileSync(path.join(ws, 'ok.txt'), 'utf8'),
    tree: treeOf(ws),
  };
}

let privateBefore: Record<string, unknown>;
let workspaceBefore: Record<string, unknown>;

function expectUntouched(): void {
  expect(privateState()).toEqual(privateBefore);
  expect(workspaceState()).toEqual(workspaceBefore);
  expect(uploadTemporaries(agent.workspace)).toEqual([]);
  expect(existsSync(path.join(agent.workspace, 'moved-away'))).toBe(false);
}

withBubblewrap("the agent's private paths", () => {
  beforeAll(async () => {
    hidden = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-files-private-')));
    mkdirSync(path.join(hidden, 'sub'));
    writeFileSync(path.join(hidden, 'secret.txt'), 'the agent key');
    writeFileSync(path.join(hidden, 'sub/inner.txt'), 'inner');
    secretMtimeMs = statSync(path.join(hidden, 'secret.txt')).mtimeMs;
    mkdirSync(`${hidden}-sibling`);
    writeFileSync(`${hidden}-sibling/open.txt`, 'not private');
    agent = await startTestAgent({
      confined: { hidePaths: [hidden] },
      features: (ctx) => [filesFeature(ctx), execFeature(ctx)],
    });
    operations = fileOperations(agent, agent.token(['fs:rw']));
    const ws = agent.workspace;
    writeFileSync(path.join(ws, 'ok.txt'), 'ok');
    symlinkSync(`${hidden}/secret.txt`, path.join(ws, 'priv-file'));
    symlinkSync(hidden, path.join(ws, 'priv-dir'));
    symlinkSync(`${hidden}/missing.txt`, path.join(ws, 'priv-broken'));
    symlinkSync(path.relative(ws, `${hidden}/secret.txt`), path.join(ws, 'priv-climb'));
    symlinkSync('priv-hop', path.join(ws, 'priv-chain'));
    symlinkSync(`${ws}/../${path.basename(hidden)}/secret.txt`, path.join(ws, 'priv-hop'));
    privateBefore = privateState();
    workspaceBefore = workspaceState();
  });
  afterAll(async () => {
    await agent.close();
    rmSync(hidden, { recursive: true, force: true });
    rmSync(`${hidden}-sibling`, { recursive: true, force: true });
  });

  describe.each(FILE_OPERATION_NAMES)('%s', (operation) => {
    it.each(BY_LINK)('refuses $name with 403 and touches nothing', async ({ raw }) => {
      expect(expectError(await operations[operation](raw()), 'FORBIDDEN', 403)).toMatch(NOT_SERVED);
      expectUntouched();
    });
  });

  describe.each(SANDBOX_PATH_OPERATION_NAMES)('%s', (operation) => {
    it.each(BY_NAME)('refuses $name by its absolute path with 403 and touches nothing', async ({ raw }) => {
      expect(expectError(await operations[operation](raw()), 'FORBIDDEN', 403)).toMatch(NOT_SERVED);
      expectUntouched();
    });
  });

  it('names the path that is refused, never what is inside', async () => {
    const res = await operations['read (download)'](encodeURIComponent(`${hidden}/secret.txt`));
    expect(expectError(res, 'FORBIDDEN', 403).startsWith(`${hidden} leads into /proc`)).toBe(true);
    expect(res.body.toString()).not.toContain('the agent key');
    expect(statSync(path.join(hidden, 'secret.txt')).mtimeMs).toBe(secretMtimeMs);
  });

  it('serves a sibling whose name only starts like the private path', async () => {
    const sibling = encodeURIComponent(`${hidden}-sibling/open.txt`);
    const read = await operations['read (download)'](sibling);
    expect({ status: read.status, body: read.body.toString() }).toEqual({ status: 200, body: 'not private' });
    expect((await operations['write (upload)'](sibling)).status).toBe(200);
    expect(readFileSync(`${hidden}-sibling/open.txt`, 'utf8')).toBe('pwned');
    expectUntouched();
  });

  it("is just as hidden from the sandbox's processes: an empty directory there", async () => {
    const response = await call(agent, agent.token(['process']), 'POST', '/v1/exec', {
      cmd: `ls -A ${hidden}; cat ${hidden}/secret.txt`,
    });
    const result = ExecResponse.parse(response.body);
    expect(result.stdout).toBe('');
    expect(result.exit_code).not.toBe(0);
    expect(result.stderr).toContain('No such file or directory');
    expectUntouched();
  });
});
