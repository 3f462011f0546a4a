import { access, constants, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { errnoCode } from '@sbx/service-kit';
import type { SandboxLimits } from './sandbox-limits.js';

const CPU_PERIOD_US = 100_000;
const V1_CONTROLLERS = ['pids', 'memory', 'cpu'] as const;
const GROUP = 'sbx';

/** How this host lets the broker limit a sandbox as a whole. */
export interface SandboxCgroups {
  readonly version: 'v1' | 'v2';
  /** Makes the sandbox's cgroup(s) with its limits; the agent joins the directories returned. */
  create(sandboxId: string, limits: SandboxLimits): Promise<string[]>;
  /** Removes them once their processes are gone (a no-op when they do not exist). */
  remove(sandboxId: string): Promise<void>;
}

async function writable(file: string): Promise<boolean> {
  return access(file, constants.W_OK).then(
    () => true,
    () => false,
  );
}

/**
 * cgroup v2 (one tree, `pids.max`, `memory.max`, `cpu.max`) or v1 (one tree per
 * controller), or undefined when this process may not make cgroups (not root, no
 * delegation): rlimits alone then hold (docs/security.md).
 */
export async function detectCgroups(root = '/sys/fs/cgroup'): Promise<SandboxCgroups | undefined> {
  if (await writable(path.join(root, 'cgroup.subtree_control'))) return cgroupsV2(root);
  const v1 = await Promise.all(V1_CONTROLLERS.map((name) => writable(path.join(root, name, 'cgroup.procs'))));
  return v1.every(Boolean) ? await cgroupsV1(root) : undefined;
}

/** Where this process sits in one v1 hierarchy (`4:memory:/a/b` → `/a/b`). */
async function ownV1Path(controller: string): Promise<string> {
  const lines = (await readFile('/proc/self/cgroup', 'utf8')).split('\n');
  for (const line of lines) {
    const [, names = '', where = '/'] = line.split(':');
    if (names.split(',').includes(controller)) return where;
  }
  return '/';
}

/** Nested under the broker's own cgroups, so whatever limits the broker also bounds its sandboxes. */
async function cgroupsV1(root: string): Promise<SandboxCgroups> {
  const own = await Promise.all(V1_CONTROLLERS.map((name) => ownV1Path(name)));
  const dirs = (sandboxId: string): string[] =>
    V1_CONTROLLERS.map((name, i) => path.join(root, name, own[i] ?? '/', GROUP, sandboxId));
  return {
    version: 'v1',
    async create(sandboxId, limits) {
      const [pids = '', memory = '', cpu = ''] = dirs(sandboxId);
      await Promise.all([pids, memory, cpu].map((dir) => mkdir(dir, { recursive: true })));
      await writeFile(path.join(pids, 'pids.max'), String(limits.maxProcesses));
      await writeFile(path.join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // Swap counts too where the kernel accounts it (memsw), or the limit is a suggestion.
      await writeIfPresent(path.join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
      await writeFile(path.join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      await writeFile(path.join(cpu, 'cpu.cfs_quota_us'), String(cpuQuota(limits)));
      return dirs(sandboxId);
    },
    remove: (sandboxId) => removeAll(dirs(sandboxId)),
  };
}

function cgroupsV2(root: string): SandboxCgroups {
  const parent = path.join(root, GROUP);
  const dir = (sandboxId: string): string => path.join(parent, sandboxId);
  return {
    version: 'v2',
    async create(sandboxId, limits) {
      // Controllers must be enabled on every level above the sandbox's cgroup.
      await enableControllers(root);
      await mkdir(parent, { recursive: true });
      await enableControllers(parent);
      await mkdir(dir(sandboxId), { recursive: true });
      await writeFile(path.join(dir(sandboxId), 'pids.max'), String(limits.maxProcesses));
      await writeFile(path.join(dir(sandboxId), 'memory.max'), String(limits.memoryBytes));
      await writeIfPresent(path.join(dir(sandboxId), 'memory.swap.max'), '0');
      await writeFile(path.join(dir(sandboxId), 'cpu.max'), `${cpuQuota(limits)} ${CPU_PERIOD_US}`);
      return [dir(sandboxId)];
    },
    remove: (sandboxId) => removeAll([dir(sandboxId)]),
  };
}

async function enableControllers(dir: string): Promise<void> {
  const available = (await readFile(path.join(dir, 'cgroup.controllers'), 'utf8')).split(/\s+/);
  const wanted = V1_CONTROLLERS.filter((name) => available.includes(name));
  if (wanted.length < V1_CONTROLLERS.length)
    throw new Error(`cgroup ${dir} lacks controllers (has: ${available.join(' ')})`);
  await writeFile(path.join(dir, 'cgroup.subtree_control'), wanted.map((name) => `+${name}`).join(' '));
}

async function writeIfPresent(file: string, value: string): Promise<void> {
  if (await writable(file)) await writeFile(file, value);
}

function cpuQuota(limits: SandboxLimits): number {
  return Math.max(1000, Math.round((limits.cpuMillicores / 1000) * CPU_PERIOD_US));
}

/** Whatever still runs in a sandbox's cgroup belongs to it (a stray helper of a crashed agent). */
async function killMembers(dir: string): Promise<void> {
  const procs = await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const pid of procs.split('\n').filter((line) => /^\d+$/.test(line))) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/** rmdir fails with EBUSY while the kernel still tears the last processes down: retry briefly. */
async function removeAll(dirs: readonly string[]): Promise<void> {
  await Promise.all(dirs.map((dir) => killMembers(dir)));
  for (const dir of dirs) {
    for (let attempt = 0; ; attempt++) {
      try {
        await rmdir(dir);
        break;
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'ENOENT') break;
        if (code !== 'EBUSY' || attempt >= 50) throw err;
        await sleep(20);
      }
    }
  }
}
