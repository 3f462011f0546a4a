import { existsSync } from 'node:fs';
import type { AgentCommand } from './agent-process.js';
import type { SandboxLimits } from './sandbox-limits.js';

const PRLIMIT = '/usr/bin/prlimit';
const KEYCTL = '/usr/bin/keyctl';

/**
 * How the broker starts a sandbox's agent, wrapped in what every user process must
 * inherit from it:
 * - a new anonymous session keyring (`keyctl session -`): the kernel's session keyring
 *   passes across uid changes and namespaces, so without it user code could read the
 *   keys of the broker's login session and leave keys for other sandboxes;
 * - rlimits: RLIMIT_NPROC counts the processes of the sandbox's own user (the root agent
 *   itself is exempt), RLIMIT_FSIZE bounds any one file, written by a process or through
 *   the file API (Node ignores SIGXFSZ, so an upload past it fails with EFBIG).
 * Each wrapper is skipped where its tool is missing (docs/security.md says what then holds).
 */
export function agentLaunchCommand(command: AgentCommand, limits: SandboxLimits): AgentCommand {
  const limited = existsSync(PRLIMIT)
    ? {
        file: PRLIMIT,
        args: [
          `--nproc=${limits.maxProcesses}`,
          `--fsize=${limits.maxFileBytes}`,
          '--',
          command.file,
          ...command.args,
        ],
      }
    : command;
  return existsSync(KEYCTL)
    ? { file: KEYCTL, args: ['session', '-', limited.file, ...limited.args] }
    : limited;
}
