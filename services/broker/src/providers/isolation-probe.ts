import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SANDBOX_WORKSPACE, type AgentEnvVariables } from '@sbx/service-kit';
import { agentLaunchCommand } from './agent-command.js';
import type { AgentCode } from './agent-bundle.js';
import { DEFAULT_SANDBOX_LIMITS } from './sandbox-limits.js';
import { traversableDir } from './sandbox-layout.js';
import { hostTun, tunNodeFor, type ViewDevice } from './tun-device.js';

export interface ProbeSetup {
  readonly bwrapPath: string;
  readonly slirp4netnsPath: string;
  /** Real path; hidden inside sandboxes. */
  readonly dataDir: string;
  readonly hiddenPaths: readonly string[];
  readonly agentCode: AgentCode;
  /** The host user sandboxes run as (a root broker's probe user); omitted: the broker's own. */
  readonly runAs?: { readonly uid: number; readonly gid: number };
}

const PROBE_TIMEOUT_MS = 20_000;
const OUTPUT_LIMIT = 16_384;

/**
 * Proves confinement from inside, as an attacker would try to break it: the agent itself
 * is started exactly as a sandbox's agent is (its view, the sandbox's user, no
 * capability), in its probe mode (services/agent/src/isolation-probe.ts): it makes the
 * sandbox's namespaces and runs its checks from inside them. Resolves with what failed,
 * or undefined when everything held.
 */
export async function probeConfinement(setup: ProbeSetup, network: boolean): Promise<string | undefined> {
  const tag = randomBytes(6).toString('hex');
  const workspaces = path.join(setup.dataDir, 'workspaces');
  const workspace = path.join(workspaces, `.probe-${tag}`);
  const other = path.join(workspaces, `.probe-other-${tag}`);
  const canary = path.join(setup.dataDir, `.probe-canary-${tag}`);
  const tun = path.join(workspaces, `.probe-tun-${tag}`);
  try {
    await traversableDir(workspaces);
    await mkdir(workspace, { mode: 0o700 });
    if (setup.runAs !== undefined) await chown(workspace, setup.runAs.uid, setup.runAs.gid);
    await mkdir(other, { mode: 0o755 });
    await writeFile(canary, 'secret', { mode: 0o644 });
    const device = setup.runAs === undefined ? await hostTun() : await tunNodeFor(tun, setup.runAs.gid);
    return await runProbe(setup, network ? (device === undefined ? [] : [device]) : undefined, workspace, [
      canary,
      other,
    ]);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    await Promise.all([workspace, other, canary, tun].map((p) => rm(p, { recursive: true, force: true })));
  }
}

/** `network`: the devices a network-on sandbox's agent gets; undefined: network off. */
async function runProbe(
  setup: ProbeSetup,
  network: readonly ViewDevice[] | undefined,
  workspace: string,
  targets: readonly string[],
): Promise<string | undefined> {
  const agent = setup.agentCode.viewCommand;
  const command = agentLaunchCommand({
    agent: { file: agent.file, args: [...agent.args, '--isolation-probe', ...targets] },
    limits: DEFAULT_SANDBOX_LIMITS,
    cgroupProcs: [],
    view: {
      bwrapPath: setup.bwrapPath,
      workspace,
      hidePaths: setup.hiddenPaths,
      agentCode: setup.agentCode.hostDir,
      devices: network ?? [],
      runAs: setup.runAs,
    },
    runAs: setup.runAs,
  });
  const env: AgentEnvVariables = {
    SANDBOX_ID: 'isolation-probe',
    SANDBOX_SIGNING_KEY: randomBytes(32).toString('base64url'),
    WORKSPACE_ROOT: SANDBOX_WORKSPACE,
    LOG_LEVEL: 'error',
    AGENT_LAUNCHER: 'bubblewrap',
    AGENT_SHARED_VIEW: 'true',
    AGENT_BWRAP_PATH: setup.bwrapPath,
    AGENT_SLIRP4NETNS_PATH: setup.slirp4netnsPath,
    AGENT_NETWORK: network === undefined ? 'false' : 'true',
  };
  // stdin stays open: the agent takes its end for the broker's (agent-bundle.ts).
  const child = spawn(command.file, command.args, {
    cwd: '/',
    env: { ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.on('error', () => undefined);
  const output = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    if (output.stdout.length < OUTPUT_LIMIT) output.stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    if (output.stderr.length < OUTPUT_LIMIT) output.stderr += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
  await once(child, 'close');
  const code = child.exitCode;
  clearTimeout(timer);
  const verdict = /^probe: (.*)$/m.exec(output.stdout)?.[1];
  if (verdict === 'ok' && code === 0) return undefined;
  // `keyctl session -` announces the keyring it made: not the agent's last words.
  const stderr = output.stderr
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('Joined session keyring'));
  const why = verdict ?? (stderr.slice(-3).join(' | ') || `exit ${String(code)}`);
  return `confinement does not hold inside the sandbox: ${why}`;
}
