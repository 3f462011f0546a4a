import { existsSync } from 'node:fs';
import type { AgentCommand } from './agent-process.js';
import type { SandboxLimits } from './sandbox-limits.js';

const PRLIMIT = '/usr/bin/prlimit';

/**
 * The agent started under rlimits that every user process inherits: RLIMIT_NPROC counts
 * the processes of the sandbox's own user (the root agent itself is exempt), and
 * RLIMIT_FSIZE bounds any one file, written through a process or the file API alike
 * (Node ignores SIGXFSZ, so an upload past it fails with EFBIG instead of killing the
 * agent). Without prlimit (not util-linux) the command runs as is.
 */
export function limitedCommand(command: AgentCommand, limits: SandboxLimits): AgentCommand {
  if (!existsSync(PRLIMIT)) return command;
  return {
    file: PRLIMIT,
    args: [
      `--nproc=${limits.maxProcesses}`,
      `--fsize=${limits.maxFileBytes}`,
      '--',
      command.file,
      ...command.args,
    ],
  };
}
