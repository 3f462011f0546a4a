// One sandbox hitting its limits (processes, memory, file size) gets a clear error inside,
// while the broker's provider and a second sandbox keep answering. Real cgroups (as root)
// and rlimits, real bubblewrap sandboxes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { SandboxLimits } from '../../src/providers/sandbox-limits.js';
import { contractSpec } from './provider-contract.js';
import { newDataDirOutsideTmp, startLocalKit, tokenFor, type LocalKit } from './local-provider-kit.js';
import { exec, type Door } from './sandbox-doors.js';

const asRoot = process.getuid?.() === 0 ? describe : describe.skip;
const MIB = 1024 * 1024;
const LIMITS: SandboxLimits = {
  maxProcesses: 64,
  memoryBytes: 512 * MIB,
  cpuMillicores: 500,
  maxFileBytes: 8 * MIB,
  diskBytes: 24 * MIB,
};

function authed(door: Door, scopes: string[], init: RequestInit = {}): RequestInit {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${tokenFor(door.spec, scopes)}`);
  return { ...init, headers };
}

async function startBackground(door: Door, cmd: string): Promise<string> {
  const response = await fetch(
    `${door.dataplane.httpBaseUrl}/v1/processes`,
    authed(door, ['process'], {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ cmd }),
    }),
  );
  expect(response.status).toBe(201);
  return ((await response.json()) as { process_id: string }).process_id;
}

async function outputOf(door: Door, id: string): Promise<string> {
  const response = await fetch(
    `${door.dataplane.httpBaseUrl}/v1/processes/${id}/output`,
    authed(door, ['process']),
  );
  const body = (await response.json()) as { stdout?: { data: string }; stderr?: { data: string } };
  return `${body.stdout?.data ?? ''}${body.stderr?.data ?? ''}`;
}

/** The cgroup (v1 or v2) line of a process, e.g. `pids:/…/sbx/<id>`. */
function cgroupsOf(pid: number): string {
  return readFileSync(`/proc/${pid}/cgroup`, 'utf8');
}

asRoot('sandbox limits', () => {
  let kit: LocalKit;
  let limited: Door;
  let neighbour: Door;

  beforeAll(async () => {
    kit = await startLocalKit({ isolation: 'bubblewrap', dataDir: newDataDirOutsideTmp() });
    const spec = contractSpec({ network: 'off', limits: LIMITS });
    limited = { spec, dataplane: (await kit.provider.create(spec)).dataplane };
    const other = contractSpec({ network: 'off' });
    neighbour = { spec: other, dataplane: (await kit.provider.create(other)).dataplane };
  });

  afterAll(async () => kit.dispose());

  it('puts the agent and its user processes in cgroups of the sandbox with the tenant’s limits', async () => {
    const result = await exec(limited, 'cat /proc/self/cgroup');
    expect(result.stdout).toContain(`/sbx/${limited.spec.sandboxId}`);
    const cgroupDir = /^\d+:[^:]*pids[^:]*:(.*)$/m.exec(result.stdout)?.[1] ?? '';
    const pidsMax = readFileSync(path.join('/sys/fs/cgroup/pids', cgroupDir, 'pids.max'), 'utf8').trim();
    expect(pidsMax).toBe(String(LIMITS.maxProcesses));
    const memoryDir = /^\d+:[^:]*memory[^:]*:(.*)$/m.exec(cgroupsOf(process.pid))?.[1] ?? '/';
    const memoryMax = path.join(
      '/sys/fs/cgroup/memory',
      memoryDir,
      'sbx',
      limited.spec.sandboxId,
      'memory.limit_in_bytes',
    );
    expect(readFileSync(memoryMax, 'utf8').trim()).toBe(String(LIMITS.memoryBytes));
  });

  it('ends a fork bomb at the process limit with "cannot fork", while a second sandbox keeps answering', async () => {
    const bomb = await startBackground(
      limited,
      'for i in $(seq 1 120); do sleep 60 & done; echo launched; wait',
    );
    let output = '';
    for (let polls = 0; polls < 500 && !output.includes('launched'); polls++) {
      output = await outputOf(limited, bomb);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(output).toMatch(/fork|Resource temporarily unavailable/i);
    const visible = await fetch(`${neighbour.dataplane.httpBaseUrl}/v1/exec`, {
      ...authed(neighbour, ['process'], {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ cmd: 'echo still here' }),
      }),
    });
    expect(await visible.json()).toMatchObject({ exit_code: 0, stdout: 'still here\n' });
    expect(await kit.provider.status(neighbour.spec.sandboxId)).toBe('running');
    // Its own agent shares the sandbox's process limit, and still answers: files are served, and
    // a new process is refused with a clear error rather than a hang or a crash.
    const read = await fetch(
      `${limited.dataplane.httpBaseUrl}/v1/files/list?path=%2Ftmp`,
      authed(limited, ['fs:ro']),
    );
    expect(read.status).toBe(200);
    const refused = await fetch(`${limited.dataplane.httpBaseUrl}/v1/exec`, {
      ...authed(limited, ['process'], {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ cmd: 'echo forked' }),
      }),
    });
    const answer = (await refused.json()) as { error?: { message: string }; stdout?: string };
    expect(refused.status === 200 ? answer.stdout : answer.error?.message).toMatch(
      /forked|process|resource|fork/i,
    );
    expect(refused.status).toBeLessThan(500);
    await fetch(
      `${limited.dataplane.httpBaseUrl}/v1/processes/${bomb}`,
      authed(limited, ['process'], { method: 'DELETE' }),
    );
  });

  it('kills a memory hog at the memory limit; the sandbox itself keeps answering', async () => {
    const hog = await exec(limited, 'head -c 1500M /dev/zero | tail > /dev/null; echo "rc=$?"', {
      timeout_ms: 60_000,
    });
    expect(hog.stdout).toMatch(/^rc=137$/m);
    expect(await exec(limited, 'echo alive')).toMatchObject({ exit_code: 0, stdout: 'alive\n' });
  });

  it('stops a disk filler at the largest file size, through a process and through the file API', async () => {
    const filler = await exec(limited, 'head -c 20M /dev/zero > big; echo "rc=$?"; stat -c %s big');
    expect(filler.stderr).toContain('File size limit exceeded');
    expect(filler.stdout.split('\n').slice(0, 2)).toEqual(['rc=153', String(LIMITS.maxFileBytes)]);
    const upload = await fetch(`${limited.dataplane.httpBaseUrl}/files/upload.bin`, {
      ...authed(limited, ['fs:rw'], { method: 'PUT', body: Buffer.alloc(LIMITS.maxFileBytes + MIB) }),
    });
    expect(upload.status).toBe(413);
    expect(((await upload.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await exec(limited, 'ls upload.bin 2>&1; echo done')).toMatchObject({ exit_code: 0 });
  });

  it('stops a disk filler at the workspace size with "no space", through a process and the file API', async () => {
    const filler = await exec(
      limited,
      'for i in 1 2 3 4 5; do head -c 7M /dev/zero > fill-$i || { echo "full at $i"; break; }; done; df -k . | tail -1',
    );
    expect(filler.stderr).toContain('No space left on device');
    expect(filler.stdout).toMatch(/^full at [2-4]$/m);
    const upload = await fetch(`${limited.dataplane.httpBaseUrl}/files/more.bin`, {
      ...authed(limited, ['fs:rw'], { method: 'PUT', body: Buffer.alloc(7 * MIB) }),
    });
    expect(upload.status).toBe(507);
    // The host's disk and the neighbour are untouched; freeing space makes room again.
    expect(await exec(neighbour, 'head -c 7M /dev/zero > ok && echo wrote')).toMatchObject({
      stdout: 'wrote\n',
    });
    expect(await exec(limited, 'rm -f fill-* && head -c 7M /dev/zero > again && echo wrote')).toMatchObject({
      stdout: 'wrote\n',
    });
  });
});
