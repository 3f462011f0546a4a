// The file API sees what the shell sees, over the sandbox's whole filesystem, not only the
// workspace (issue 26): /tmp, HOME, /workspace and relative paths name the same file through
// every door; system files read alike and refuse writes alike; every sandbox has terminals of
// its own. Through the real local provider under bubblewrap.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocket } from 'ws';
import { contractSpec } from './provider-contract.js';
import { startLocalKit, tokenFor, type LocalKit } from './local-provider-kit.js';
import { exec, READERS, readFile, shellRunning, WRITERS, type Door } from './sandbox-doors.js';

async function call(door: Door, method: string, route: string, body?: string): Promise<Response> {
  return fetch(`${door.dataplane.httpBaseUrl}${route}`, {
    method,
    headers: { authorization: `Bearer ${tokenFor(door.spec, ['fs:rw'])}` },
    ...(body === undefined ? {} : { body }),
  });
}

const q = (file: string): string => encodeURIComponent(file);

/** Resolves with the first watch event's path once `act` has run. */
async function watchedPath(door: Door, dir: string, act: () => Promise<void>): Promise<string> {
  const socket = new WebSocket(`${door.dataplane.wsBaseUrl}/v1/files/watch`);
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no watch event under ${dir}`)), 60_000);
    socket.on('error', reject);
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'auth', token: tokenFor(door.spec, ['fs:ro']) }));
      socket.send(JSON.stringify({ type: 'start', path: dir, recursive: true }));
    });
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string; path?: string };
      if (frame.type === 'ready') act().catch(reject);
      if (frame.type === 'error') reject(new Error(data.toString('utf8')));
      if (frame.type === 'event' && frame.path !== undefined) {
        clearTimeout(timer);
        socket.close();
        resolve(frame.path);
      }
    });
  });
}

describe("the file API sees the sandbox's whole filesystem, as every other door does (bubblewrap)", () => {
  let kit: LocalKit;
  let a: Door;
  let b: Door;

  beforeAll(async () => {
    kit = await startLocalKit({ isolation: 'bubblewrap' });
    const specA = contractSpec({ network: 'off' });
    const specB = contractSpec({ network: 'off' });
    a = { spec: specA, dataplane: (await kit.provider.create(specA)).dataplane };
    b = { spec: specB, dataplane: (await kit.provider.create(specB)).dataplane };
    await exec(a, 'mkdir -p /tmp/doors "$HOME/home-doors" doors');
  });

  afterAll(async () => {
    await kit.dispose();
  });

  for (const [where, prefix] of [
    ['/tmp', '/tmp/doors/'],
    ['HOME', '/workspace/home-doors/'],
    ['relative', 'doors/'],
  ] as const) {
    for (const [writer, write] of WRITERS) {
      for (const [reader, read] of READERS) {
        if (writer === reader) continue;
        it(`${writer} writes, ${reader} reads, under ${where}`, async () => {
          const file = `${prefix}${writer}-${reader}.txt`.replaceAll(' ', '_');
          const content = `from-${randomBytes(6).toString('hex')}`;
          await write(a, file, content);
          expect(await read(a, file)).toContain(content);
        });
      }
    }
  }

  it('a watch on /tmp sees what a process writes there, under the path processes use', async () => {
    await exec(a, 'mkdir -p /tmp/watched');
    const seen = await watchedPath(a, '/tmp/watched', async () => {
      await exec(a, 'echo hi > /tmp/watched/by-exec.txt');
    });
    expect(seen).toBe('/tmp/watched/by-exec.txt');
  });

  it('lists / and reads system files as a process does; the kernel refuses writes to them alike', async () => {
    const listing = (await (await call(a, 'GET', `/v1/files/list?path=${q('/')}`)).json()) as {
      entries: { name: string }[];
    };
    const shown = (await exec(a, 'ls -A /')).stdout.trim().split('\n');
    expect(listing.entries.map((entry) => entry.name).toSorted()).toEqual(shown.toSorted());
    expect(await readFile(a, '/etc/os-release')).toBe((await exec(a, 'cat /etc/os-release')).stdout);

    const refused = await call(a, 'POST', `/v1/files/upload?path=${q('/etc/os-release')}`, 'pwned');
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /read-only file system|permission denied/,
    );
    expect((await exec(a, 'echo pwned > /etc/os-release; echo rc=$?')).stdout).toMatch(/^rc=[1-9]$/m);
    expect(await readFile(a, '/etc/os-release')).not.toContain('pwned');
  });

  it("refuses the agent's own /proc through the file API; a process reads the sandbox's", async () => {
    const refused = await call(a, 'GET', `/v1/files/download?path=${q('/proc/self/environ')}`);
    expect(refused.status).toBe(403);
    await exec(a, 'ln -sfn /proc/self/environ leak');
    expect((await call(a, 'GET', '/files/leak')).status).toBe(403);
    expect((await exec(a, 'cat /proc/self/status | head -1')).stdout).toMatch(/^Name:/);
  });

  it('gives every sandbox terminals of its own: tty, pty.openpty and tmux work, no other terminal shows', async () => {
    const shown = await shellRunning(
      a,
      'tty; python3 -c "import os, pty; m, s = pty.openpty(); print(\'opened\', os.ttyname(s))"; ' +
        'tmux -S /tmp/tmux.sock new-session -d -s t "sleep 30" && tmux -S /tmp/tmux.sock ls; ls /dev/pts',
    );
    expect(shown).toMatch(/^\/dev\/pts\/\d+\r?$/m);
    expect(shown).toMatch(/opened \/dev\/pts\/\d+/);
    expect(shown).toMatch(/^t: 1 windows/m);
    // Sandbox b never sees a's terminals: only its own shell's and the multiplexer's.
    const inB = await shellRunning(b, 'ls /dev/pts | grep -vc ptmx');
    expect(Number(/^(\d+)\r?$/m.exec(inB)?.[1])).toBe(1);
  });
});
