// One sandbox is one machine: every door (file API, exec, background process, shell, watch)
// names a file by the same absolute and relative path, shares /tmp and HOME, and sees the
// sandbox's processes and no one else's. Through the real local provider under bubblewrap.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocket } from 'ws';
import { contractSpec } from './provider-contract.js';
import { startLocalKit, tokenFor, type LocalKit } from './local-provider-kit.js';
import { background, exec, READERS, readFile, shellRunning, WRITERS, type Door } from './sandbox-doors.js';

const WORKSPACE = '/workspace';

/** Opens a recursive watch and collects the paths of its events. */
async function watch(door: Door, target: string): Promise<{ paths: Set<string>; close: () => void }> {
  const socket = new WebSocket(`${door.dataplane.wsBaseUrl}/v1/files/watch`);
  const paths = new Set<string>();
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('open', () => {
      socket.send(JSON.stringify({ type: 'auth', token: tokenFor(door.spec, ['fs:ro']) }));
      socket.send(JSON.stringify({ type: 'start', path: target, recursive: true }));
    });
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string; path?: string };
      if (frame.type === 'ready') resolve();
      if (frame.type === 'error') reject(new Error(data.toString('utf8')));
      if (frame.type === 'event' && frame.path !== undefined) paths.add(frame.path);
    });
  });
  return { paths, close: () => socket.close() };
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('one sandbox, one view: the same world through every door (bubblewrap)', () => {
  let kit: LocalKit;
  let a: Door;
  let b: Door;

  beforeAll(async () => {
    kit = await startLocalKit({ isolation: 'bubblewrap' });
    const specA = contractSpec({ network: 'off' });
    const specB = contractSpec({ network: 'off' });
    a = { spec: specA, dataplane: (await kit.provider.create(specA)).dataplane };
    b = { spec: specB, dataplane: (await kit.provider.create(specB)).dataplane };
    await exec(a, 'mkdir -p doors');
  });

  afterAll(async () => {
    await kit.dispose();
  });

  it('reports /workspace as where the workspace is, to the broker and through GET /v1/info', async () => {
    expect(a.dataplane.workspacePath).toBe(WORKSPACE);
    const response = await fetch(`${a.dataplane.httpBaseUrl}/v1/info`, {
      headers: { authorization: `Bearer ${tokenFor(a.spec, ['fs:ro'])}` },
    });
    expect(await response.json()).toMatchObject({ workspace_path: WORKSPACE, home: WORKSPACE });
    const where = await exec(a, 'pwd; echo "$HOME"');
    expect(where.stdout).toBe(`${WORKSPACE}\n${WORKSPACE}\n`);
  });

  for (const [form, prefix] of [
    ['absolute', `${WORKSPACE}/doors/`],
    ['relative', 'doors/'],
  ] as const) {
    for (const [writer, write] of WRITERS) {
      for (const [reader, read] of READERS) {
        if (writer === reader) continue;
        it(`${writer} writes, ${reader} reads, at the same ${form} path`, async () => {
          const name = `${writer}-${reader}-${form}.txt`.replaceAll(' ', '_');
          const content = `from-${randomBytes(6).toString('hex')}`;
          await write(a, `${prefix}${name}`, content);
          expect(await read(a, `${prefix}${name}`)).toContain(content);
        });
      }
    }
  }

  it('a watch on the workspace sees what every door writes, under the paths processes use', async () => {
    const watching = await watch(a, `${WORKSPACE}/doors`);
    try {
      for (const [writer, write] of WRITERS) {
        const file = `doors/watched-${writer.replace(' ', '_')}.txt`;
        await write(a, file, writer);
        await until(() => watching.paths.has(`${WORKSPACE}/${file}`), `the watch event of ${writer}`);
      }
      // Every event names an absolute sandbox path, never a host path or a workspace-rooted one.
      expect([...watching.paths].every((seen) => seen.startsWith(`${WORKSPACE}/doors`))).toBe(true);
    } finally {
      watching.close();
    }
  });

  it("gives every door the creating client's variables, and a sandbox without a client none", async () => {
    const spec = contractSpec({
      network: 'off',
      environment: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9000' },
    });
    const c: Door = { spec, dataplane: (await kit.provider.create(spec)).dataplane };
    expect((await exec(c, 'echo "exec:$ANTHROPIC_BASE_URL"')).stdout).toBe('exec:http://127.0.0.1:9000\n');
    expect(await shellRunning(c, 'echo "shell:$ANTHROPIC_BASE_URL"')).toContain(
      'shell:http://127.0.0.1:9000',
    );
    await background(c, 'echo "bg:$ANTHROPIC_BASE_URL" > bg-env.txt', {});
    await until(
      async () => (await exec(c, 'cat bg-env.txt 2>/dev/null').catch(() => ({ stdout: '' }))).stdout !== '',
      'the background write',
    );
    expect((await exec(c, 'cat bg-env.txt')).stdout).toBe('bg:http://127.0.0.1:9000\n');
    expect((await exec(a, 'echo "none:${ANTHROPIC_BASE_URL:-unset}"')).stdout).toBe('none:unset\n');
    await kit.provider.destroy(spec.sandboxId);
  });

  it('keeps /tmp and HOME across commands and doors: a user-installed module imports later', async () => {
    await exec(a, 'echo scratch > /tmp/scratch.txt');
    const site = (await exec(a, 'python3 -m site --user-site')).stdout.trim();
    expect(site.startsWith(`${WORKSPACE}/.local/`)).toBe(true);
    await exec(a, `mkdir -p '${site}' && echo 'ANSWER = 42' > '${site}/sbxmod.py'`);

    const imported = await exec(a, 'python3 -c "import sbxmod; print(sbxmod.ANSWER)"');
    expect(imported.stdout).toBe('42\n');
    expect(await shellRunning(a, 'cat /tmp/scratch.txt')).toContain('scratch');
    await background(a, 'cp /tmp/scratch.txt "$HOME/from-tmp.txt"', {});
    expect(await readFile(a, 'from-tmp.txt')).toBe('scratch\n');
    // Another sandbox has a /tmp of its own.
    expect((await exec(b, 'cat /tmp/scratch.txt 2>&1')).stdout).toContain('No such file');
  });

  it("a shell lists and ends the sandbox's background process; other sandboxes never see it", async () => {
    const marker = 1000 + Math.floor(Math.random() * 8000);
    const started = await fetch(`${a.dataplane.httpBaseUrl}/v1/processes`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokenFor(a.spec, ['process'])}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ cmd: `exec sleep ${marker}` }),
    });
    expect(started.status).toBe(201);
    const { process_id: id } = (await started.json()) as { process_id: string };
    const status = async (): Promise<string | undefined> => {
      const info = await fetch(`${a.dataplane.httpBaseUrl}/v1/processes/${id}`, {
        headers: { authorization: `Bearer ${tokenFor(a.spec, ['process'])}` },
      });
      return ((await info.json()) as { status?: string }).status;
    };

    expect(await shellRunning(a, 'ps -eo args')).toContain(`sleep ${marker}`);
    const elsewhere = await exec(b, 'ps -eo args');
    expect(elsewhere.stdout).not.toContain(`sleep ${marker}`);
    // Nor the host's: no agent, no broker, no nsenter (its own bwrap init is the only other).
    expect(elsewhere.stdout).not.toMatch(/node|nsenter/);

    await shellRunning(a, `pkill -f 'sleep ${marker}'`);
    await until(async () => (await status()) !== 'running', 'the background process to end');
  });

  it("keeps the agent's key, environment and memory out of reach of user code", async () => {
    const key = a.spec.signingKey.toBase64url();
    const probe = await exec(
      a,
      'for p in /proc/[0-9]*; do cat "$p/environ" "$p/cmdline" 2>/dev/null; echo; done; ' +
        'ls /proc | grep -c "^[0-9]"',
    );
    expect(probe.stdout).not.toContain(key);
    expect(probe.stdout).not.toContain('SANDBOX_ID');
    // Only a handful of the sandbox's own processes exist to attach to; the agent is not one.
    expect(Number(probe.stdout.trim().split('\n').at(-1))).toBeLessThan(10);
  });
});
