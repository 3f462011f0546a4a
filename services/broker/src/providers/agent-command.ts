import { existsSync } from 'node:fs';
import { agentViewCommand, asUser, type AgentViewOptions } from '@sbx/service-kit';
import type { AgentCommand } from './agent-process.js';
import type { SandboxLimits } from './sandbox-limits.js';

const PRLIMIT = '/usr/bin/prlimit';
const KEYCTL = '/usr/bin/keyctl';
const SH = '/bin/sh';

/** Writes its own pid into every cgroup.procs file given before `--`, then runs the rest. */
const JOIN_CGROUPS = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 111; shift; done; shift; exec "$@"';

export interface AgentLaunch {
  /** The agent itself: node and its bundle, as paths inside the view (or the host's without one). */
  readonly agent: AgentCommand;
  readonly limits: SandboxLimits;
  /** The sandbox's cgroup.procs files: joined before anything else runs, so nothing escapes them. */
  readonly cgroupProcs: readonly string[];
  /** The sandbox's view (bubblewrap); undefined: no namespaces (`LOCAL_ISOLATION=none`). */
  readonly view: AgentViewOptions | undefined;
  /** The sandbox's host user, when the broker is root and the agent must become it. */
  readonly runAs: { readonly uid: number; readonly gid: number } | undefined;
}

/**
 * How the broker starts a sandbox's agent. Everything that needs root happens here,
 * before the agent runs and on nothing user code can change: the cgroups are joined,
 * then a new anonymous session keyring (`keyctl session -`: the kernel's session keyring
 * passes across uid changes and namespaces, so without it user code could read the keys
 * of the broker's login session), then rlimits (RLIMIT_NPROC counts the processes of
 * the sandbox's own user, the agent's among them; RLIMIT_FSIZE bounds any one file,
 * written by a process or through the file API), then the sandbox's view is built and
 * root is dropped for the sandbox's own user (agent-view.ts). Each wrapper is skipped
 * where its tool is missing (docs/security.md says what then holds).
 */
export function agentLaunchCommand(launch: AgentLaunch): AgentCommand {
  let command: AgentCommand = launch.agent;
  if (launch.view !== undefined) command = agentViewCommand(launch.view, command);
  else if (launch.runAs !== undefined) command = asUser(launch.runAs, command);
  if (existsSync(PRLIMIT))
    command = {
      file: PRLIMIT,
      args: [
        `--nproc=${launch.limits.maxProcesses}`,
        `--fsize=${launch.limits.maxFileBytes}`,
        '--',
        command.file,
        ...command.args,
      ],
    };
  if (existsSync(KEYCTL)) command = { file: KEYCTL, args: ['session', '-', command.file, ...command.args] };
  if (launch.cgroupProcs.length > 0)
    command = {
      file: SH,
      args: [
        '-c',
        JOIN_CGROUPS,
        'sbx-join-cgroups',
        ...launch.cgroupProcs,
        '--',
        command.file,
        ...command.args,
      ],
    };
  return command;
}
