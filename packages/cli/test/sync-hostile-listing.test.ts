// A pull from an agent that answers its listings with names meant to escape the local
// directory. The agent is faked (a FilesApi that lists what the test says): a real agent
// never lists such names, which is the point of not trusting one.
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from '@jest/globals';
import type { FilesApi } from '@sbx/client';
import { SyncManifest } from '../src/sync/manifest.js';
import { pull } from '../src/sync/pull.js';
import { isControl } from '../src/printable.js';
import { changeLine, SyncReport } from '../src/sync/report.js';

type Listed = { readonly name: string; readonly type: 'file' | 'dir' };

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An agent whose listing of each directory is `listing[dir]`, and whose every file reads "pwnd". */
function hostileFiles(listing: Record<string, readonly Listed[]>): FilesApi {
  const mtime = new Date().toISOString();
  const files: Pick<FilesApi, 'stat' | 'list' | 'readStream'> = {
    stat: (p) => Promise.resolve({ path: p, name: '', type: 'dir', size: 0, mode: '0755', mtime }),
    list: (p) =>
      Promise.resolve({
        path: p,
        entries: (listing[p] ?? []).map((e) => ({
          ...e,
          path: `${p}/${e.name}`,
          size: 4,
          mode: '0644',
          mtime,
        })),
      }),
    readStream: () =>
      Promise.resolve(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('pwnd'));
            controller.close();
          },
        }),
      ),
  };
  // oxlint-disable-next-line typescript/no-unsafe-type-assertion -- a pull calls these three only
  return files as FilesApi;
}

it('skips every listed name that is not one plain path segment, writes nothing outside, and says so', async () => {
  const base = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-hostile-')));
  dirs.push(base);
  const root = path.join(base, 'dest');
  const files = hostileFiles({
    '/workspace': [
      { name: '../outside.txt', type: 'file' },
      { name: '..', type: 'dir' },
      { name: '.', type: 'dir' },
      { name: '', type: 'file' },
      { name: 'sub/../../deep.txt', type: 'file' },
      { name: 'back\\slash.txt', type: 'file' },
      { name: 'bell\u0007\u001b]0;owned\u0007.txt', type: 'file' },
      { name: 'ok.txt', type: 'file' },
    ],
    '/workspace/..': [{ name: 'climbed.txt', type: 'file' }],
  });
  const lines: string[] = [];
  const report = new SyncReport({ direction: 'pull', local: root, remote: 't:/workspace' }, (change) =>
    lines.push(changeLine(change)),
  );
  await pull({
    files,
    thread: 't',
    localRoot: root,
    remoteRoot: '/workspace',
    deleteExtra: true,
    manifest: SyncManifest.load(path.join(base, 'home'), {
      sandboxId: 'sb_x',
      remoteRoot: '/workspace',
      localRoot: root,
    }),
    report,
    sandboxAtStart: 'sb_x',
    currentSandbox: () => 'sb_x',
  });

  expect(readdirSync(base).toSorted()).toEqual(['dest', 'home']);
  expect(readdirSync(root)).toEqual(['ok.txt']);
  expect(readFileSync(path.join(root, 'ok.txt'), 'utf8')).toBe('pwnd');
  const summary = report.summary();
  expect(summary).toMatchObject({ downloaded: 1, ignored: 7 });
  expect(lines.filter((line) => line.startsWith('ignored'))).toHaveLength(7);
  // No control character reaches the terminal.
  expect(
    lines
      .join('')
      .split('')
      .filter((char) => isControl(char.charCodeAt(0))),
  ).toEqual([]);
  expect(lines).toContain(
    'ignored    bell??]0;owned?.txt: the sandbox listed a name that is not allowed: the name contains a control character',
  );
});
