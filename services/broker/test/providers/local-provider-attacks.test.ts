// A sandbox attacked from inside, as a malicious user would, with the broker running as root
// (how `pnpm start` runs on this machine and in most containers) and real bubblewrap sandboxes.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { contractSpec } from './provider-contract.js';
import { newDataDirOutsideTmp, startLocalKit, tokenFor, type LocalKit } from './local-provider-kit.js';
import { background, exec, overSocket, shellRunning, type Door } from './sandbox-doors.js';

const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

function recordOf(kit: LocalKit, door: Door): { hostUid?: number } {
  const file = path.join(kit.dataDir, 'sandboxes', door.spec.sandboxId, 'sandbox.json');
  return JSON.parse(readFileSync(file, 'utf8')) as { hostUid?: number };
}

function hostPidsWith(marker: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line.includes(marker) && !line.includes('ps -eo'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

function hostUidOf(pid: number): number {
  return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

async function listenOnHost(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.end('host secret\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port };
}

/** Node inside the sandbox (the host's /usr is bound read-only): connect, print, or name the error. */
function connectTo(host: string, port: number): string {
  return `/usr/bin/node -e "require('net').connect(${port}, '${host}').on('data', d => { process.stdout.write('GOT ' + d); process.exit(0) }).on('error', e => { console.log('ERR ' + e.code); process.exit(0) }); setTimeout(() => { console.log('ERR timeout'); process.exit(0) }, 3000)"`;
}

asRoot('a sandbox attacked from inside, with the broker running as root', () => {
  let kit: LocalKit;
  let a: Door;
  let b: Door;
  let host: { server: Server; port: number };

  beforeAll(async () => {
    kit = await startLocalKit({ isolation: 'bubblewrap', dataDir: newDataDirOutsideTmp() });
    const specA = contractSpec({ network: 'on' });
    const specB = contractSpec({ network: 'off' });
    a = { spec: specA, dataplane: (await kit.provider.create(specA)).dataplane };
    b = { spec: specB, dataplane: (await kit.provider.create(specB)).dataplane };
    host = await listenOnHost();
  });

  afterAll(async () => {
    await new Promise((resolve) => host.server.close(resolve));
    await kit.dispose();
  });

  it('runs user code as an unprivileged user of its own, with no capabilities and no way to gain them', async () => {
    const inside = await exec(a, 'id -u; grep -E "^(CapPrm|CapEff|CapAmb|NoNewPrivs):" /proc/self/status');
    expect(inside.stdout.split('\n')).toEqual(
      expect.arrayContaining(['1000', 'CapPrm:\t0000000000000000', 'CapEff:\t0000000000000000']),
    );
    expect(inside.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
    // On the host, the same process belongs to the sandbox's own unprivileged user.
    const marker = `${3_000_000 + Math.floor(Math.random() * 1_000_000)}`;
    await fetch(`${a.dataplane.httpBaseUrl}/v1/processes`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokenFor(a.spec, ['process'])}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ argv: ['sleep', marker] }),
    });
    const pids = await waitForPids(marker);
    const hostUid = recordOf(kit, a).hostUid;
    expect(hostUid).toBeGreaterThanOrEqual(200_000);
    expect(pids.map(hostUidOf)).toEqual(pids.map(() => hostUid));
    expect(recordOf(kit, b).hostUid).not.toBe(hostUid);
  });

  it('cannot unmount, remount or mount anything to uncover the host, nor read root-only files', async () => {
    const result = await exec(
      a,
      [
        'umount -l /tmp; echo "umount-tmp=$?"',
        'umount -l /proc; echo "umount-proc=$?"',
        'mount -o remount,bind,rw /; echo "remount=$?"',
        'mount -t tmpfs none /mnt; echo "mount=$?"',
        'cat /etc/shadow; echo "shadow=$?"',
        'ls /root; echo "root=$?"',
        'touch /usr/sbx-escape; echo "write-usr=$?"',
        'echo "cgroups=$(ls -A /sys/fs/cgroup | wc -l)"',
        'ls /proc | grep -c "^[0-9]"',
      ].join('\n'),
    );
    for (const name of ['umount-tmp', 'umount-proc', 'remount', 'mount', 'shadow', 'root', 'write-usr'])
      expect(result.stdout).toMatch(new RegExp(`^${name}=[1-9]\\d*$`, 'm'));
    // No sandbox learns of others through the host's cgroup tree.
    expect(result.stdout).toMatch(/^cgroups=0$/m);
    // Only the sandbox's own processes are visible, never the broker's.
    expect(Number(result.stdout.trim().split('\n').at(-1))).toBeLessThan(10);
    expect(existsSync('/usr/sbx-escape')).toBe(false);
  });

  it("cannot read the broker's data directory, another sandbox's key or its workspace", async () => {
    const canary = path.join(kit.dataDir, 'world-readable-canary');
    writeFileSync(canary, 'broker secret', { mode: 0o644 });
    const keyOfB = path.join(kit.dataDir, 'sandboxes', b.spec.sandboxId, 'agent.key');
    const workspaceOfB = path.join(kit.dataDir, 'workspaces', b.spec.sandboxId);
    writeFileSync(path.join(workspaceOfB, 'b-file'), 'b secret', { mode: 0o644 });
    const result = await exec(
      a,
      `cat ${canary} ${keyOfB} ${workspaceOfB}/b-file; ls ${workspaceOfB}; ls -A ${kit.dataDir}; echo end`,
    );
    expect(result.stdout).not.toContain('secret');
    expect(result.stdout).not.toContain(b.spec.signingKey.toBase64url());
    expect(result.stdout).not.toContain('b-file');
    // The data directory is an empty tmpfs inside: the own workspace is at /workspace instead.
    expect(result.stdout.trim().split('\n')).toEqual(['end']);
  });

  it('cannot hard-link a host file into its workspace (a link never crosses the workspace mount)', async () => {
    const result = await exec(a, 'ln /etc/passwd linked; echo "rc=$?"');
    expect(result.stdout).toMatch(/^rc=1$/m);
    expect(result.stderr).toContain('Invalid cross-device link');
  });

  describe('a request environment never reaches the launcher', () => {
    const hostLogDir = mkdtempSync(path.join(tmpdir(), 'sbx-preload-'));
    const hostLog = path.join(hostLogDir, 'hits');
    let library = '';
    const libraryDir = mkdtempSync('/var/tmp/sbx-preload-lib-');

    beforeAll(() => {
      chmodSync(hostLogDir, 0o777);
      chmodSync(libraryDir, 0o755);
      // Appends the uid it runs as to a host file (invisible inside, where /tmp is the sandbox's own)
      // and to ./preload-ran (the workspace, for the user's own process).
      const source = path.join(hostLogDir, 'preload.c');
      writeFileSync(
        source,
        `#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\n` +
          `static void note(const char *file) { char line[32]; int n = snprintf(line, sizeof line, "%d\\n", (int)getuid());` +
          ` int fd = open(file, O_WRONLY | O_APPEND | O_CREAT, 0666); if (fd >= 0) { write(fd, line, n); close(fd); } }\n` +
          `__attribute__((constructor)) static void hit(void) { note("${hostLog}"); note("preload-ran"); }\n`,
      );
      // At a path that means the same file inside (bound read-only) and on the host, so a
      // launcher that took the variable would load it too.
      library = path.join(libraryDir, 'evil.so');
      execFileSync('gcc', ['-shared', '-fPIC', '-o', library, source]);
      chmodSync(library, 0o755);
    });

    afterAll(() => {
      rmSync(hostLogDir, { recursive: true, force: true });
      rmSync(libraryDir, { recursive: true, force: true });
    });

    const ranInside = (): string =>
      readFileSync(path.join(kit.dataDir, 'workspaces', a.spec.sandboxId, 'preload-ran'), 'utf8');

    it.each([
      ['POST /v1/exec', (env: Record<string, string>) => exec(a, 'true', { env })],
      ['POST /v1/processes', (env: Record<string, string>) => background(a, 'true', env)],
      [
        'the exec WebSocket',
        (env: Record<string, string>) => overSocket(a, '/v1/exec/ws', { type: 'start', cmd: 'true', env }),
      ],
      ['the shell WebSocket', (env: Record<string, string>) => shellRunning(a, 'true', env)],
    ])('%s: LD_PRELOAD loads in the user process inside the sandbox only', async (_door, run) => {
      rmSync(path.join(kit.dataDir, 'workspaces', a.spec.sandboxId, 'preload-ran'), { force: true });
      await run({ LD_PRELOAD: library });
      expect(existsSync(hostLog) ? readFileSync(hostLog, 'utf8') : 'never loaded on the host').toBe(
        'never loaded on the host',
      );
      // It did load where it belongs: in the user's own program, as the sandbox's user.
      expect(ranInside().split('\n')).toContain('1000');
    });
  });

  it('has a network of its own: no host loopback, no host port, no other agent', async () => {
    const agentOfB = new URL(b.dataplane.httpBaseUrl);
    const result = await exec(
      a,
      [
        connectTo('127.0.0.1', host.port),
        connectTo('10.0.2.2', host.port),
        connectTo('127.0.0.1', Number(agentOfB.port)),
        'cat /proc/net/route',
      ].join('\n'),
    );
    expect(result.stdout).not.toContain('GOT');
    expect(result.stdout.match(/^ERR /gm)).toHaveLength(3);
    // Outbound goes through the user-mode stack's tap device; the host's interfaces are not here.
    expect(result.stdout).toMatch(/^tap0\s+00000000\s/m);

    const offline = await exec(b, 'cat /proc/net/dev');
    expect(offline.stdout).not.toContain('tap0');
  });

  it('cannot serve on a host port: a port bound inside is not the host’s', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const serving = background(
      a,
      `/usr/bin/node -e "require('net').createServer(c => c.end('impostor')).listen(${port}, '0.0.0.0'); setTimeout(() => process.exit(0), 2000)"`,
      {},
    );
    // The listener inside answers its own loopback: wait for that before knocking from the host.
    const inside = await exec(a, `sleep 0.5; ${connectTo('127.0.0.1', port)}`);
    expect(inside.stdout).toBe('GOT impostor');
    const fromHost = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('data', (data: Buffer) => resolve(`GOT ${data.toString()}`));
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(`ERR ${err.code ?? ''}`));
    });
    expect(fromHost).toBe('ERR ECONNREFUSED');
    await serving;
  });

  it('leaves nothing running after destroy, not even a double-forked process in a new session', async () => {
    const spec = contractSpec({ network: 'off' });
    const door = { spec, dataplane: (await kit.provider.create(spec)).dataplane };
    const marker = `${4_000_000 + Math.floor(Math.random() * 1_000_000)}`;
    // The pause lets setsid leave the exec's process group before the exec ends (and its group is killed).
    await exec(door, `(setsid sleep ${marker} </dev/null >/dev/null 2>&1 &) ; sleep 0.3`);
    expect((await waitForPids(marker)).length).toBeGreaterThan(0);
    await kit.provider.destroy(spec.sandboxId);
    expect(hostPidsWith(`sleep ${marker}`)).toEqual([]);
  });
});

async function waitForPids(marker: string): Promise<number[]> {
  for (let tries = 0; tries < 250; tries++) {
    const pids = hostPidsWith(`sleep ${marker}`);
    if (pids.length > 0) return pids;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no process with ${marker} appeared`);
}

asRoot('a root broker without bubblewrap', () => {
  it('still never runs user code as root: each sandbox has its own unprivileged host user', async () => {
    const kit = await startLocalKit({ isolation: 'none', dataDir: newDataDirOutsideTmp() });
    try {
      const spec = contractSpec();
      const door = { spec, dataplane: (await kit.provider.create(spec)).dataplane };
      const result = await exec(
        door,
        'id -u; cat /etc/shadow >/dev/null 2>&1 || echo shadow-denied; touch made',
      );
      const hostUid = recordOf(kit, door).hostUid;
      expect(hostUid).toBeGreaterThanOrEqual(200_000);
      expect(result.stdout).toBe(`${hostUid}\nshadow-denied\n`);
    } finally {
      await kit.dispose();
    }
  });
});
