import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SANDBOX_WORKSPACE, SandboxNamespace } from '@sbx/service-kit';
import { traversableDir } from './sandbox-layout.js';

export interface ProbeSetup {
  readonly bwrapPath: string;
  readonly slirp4netnsPath: string;
  /** Real path; hidden inside sandboxes. */
  readonly dataDir: string;
  readonly hiddenPaths: readonly string[];
  /** The host user sandboxes run as (a root broker's probe user); omitted: the broker's own. */
  readonly runAs?: { readonly uid: number; readonly gid: number };
}

/** Each line `name:ok` when the attack it names fails from inside the sandbox. */
const PROBE_SCRIPT = `
[ "$(id -u)" != 0 ] && echo uid:ok
grep -Eq '^CapEff:[[:space:]]*0+$' /proc/self/status && echo capabilities:ok
umount -l /tmp 2>/dev/null || echo umount:ok
mount -t tmpfs none /tmp 2>/dev/null || echo mount:ok
cat "$1" >/dev/null 2>&1 || echo data-dir:ok
ls "$2" >/dev/null 2>&1 || echo other-workspaces:ok
touch /sbx-probe 2>/dev/null || echo read-only-root:ok
[ "$(pwd)" = ${SANDBOX_WORKSPACE} ] && touch .sbx-probe && echo workspace:ok
`;
const CHECKS = [
  'uid',
  'capabilities',
  'umount',
  'mount',
  'data-dir',
  'other-workspaces',
  'read-only-root',
  'workspace',
];
const PROBE_TIMEOUT_MS = 15_000;

/**
 * Proves confinement from inside, as an attacker would try to break it: a real sandbox
 * (the agent's own SandboxNamespace, as the sandbox's user) must not be root, must hold
 * no capability, must fail to unmount or mount, must not read a world-readable file in
 * the data directory nor list another workspace, must not write to the root, and must
 * find its own workspace, writable, at SANDBOX_WORKSPACE.
 * Resolves with what failed, or undefined when everything held.
 */
export async function probeConfinement(setup: ProbeSetup, network: boolean): Promise<string | undefined> {
  const tag = randomBytes(6).toString('hex');
  const workspaces = path.join(setup.dataDir, 'workspaces');
  const workspace = path.join(workspaces, `.probe-${tag}`);
  const other = path.join(workspaces, `.probe-other-${tag}`);
  const canary = path.join(setup.dataDir, `.probe-canary-${tag}`);
  try {
    await traversableDir(workspaces);
    await mkdir(workspace, { mode: 0o700 });
    if (setup.runAs !== undefined) await chown(workspace, setup.runAs.uid, setup.runAs.gid);
    await mkdir(other, { mode: 0o755 });
    await writeFile(canary, 'secret', { mode: 0o644 });
    return await runProbe(setup, network, workspace, [canary, other]);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    await Promise.all([workspace, other, canary].map((p) => rm(p, { recursive: true, force: true })));
  }
}

async function runProbe(
  setup: ProbeSetup,
  network: boolean,
  workspace: string,
  targets: readonly string[],
): Promise<string | undefined> {
  const namespace = await SandboxNamespace.start({
    bwrapPath: setup.bwrapPath,
    slirp4netnsPath: setup.slirp4netnsPath,
    workspaceRoot: workspace,
    hidePaths: setup.hiddenPaths,
    network,
    ...(setup.runAs === undefined ? {} : { runAs: setup.runAs }),
  });
  try {
    const plan = namespace.joinPlan({
      file: '/bin/sh',
      args: ['-c', PROBE_SCRIPT, 'sbx-probe', ...targets],
      cwd: SANDBOX_WORKSPACE,
      env: { PATH: '/usr/bin:/bin' },
    });
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(plan.file, plan.args, { ...plan, timeout: PROBE_TIMEOUT_MS }, (err, out, stderr) => {
        if (err !== null && out === '') reject(new Error(`${err.message.split('\n')[0] ?? ''} ${stderr}`));
        else resolve(out);
      });
    });
    const held = new Set(stdout.split('\n').map((line) => line.replace(/:ok$/, '')));
    const failed = CHECKS.filter((check) => !held.has(check));
    return failed.length === 0
      ? undefined
      : `confinement does not hold inside the sandbox: ${failed.join(', ')}`;
  } finally {
    await namespace.close();
  }
}
