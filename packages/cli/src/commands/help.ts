import type { CliContext } from '../context.js';
import { EXIT } from '../exit-codes.js';

export const HELP = `sbx: shared sandboxes from the terminal

  sbx login --broker <url> --api-key <key> [--actor <id>]   (or the key on stdin)
  sbx login --broker <url> --device --issuer <url> [--client-id <id>] [--scope <s>] [--audience <a>]
                                                            (OAuth device code, RFC 8628)
  sbx logout | sbx whoami
  sbx ensure <thread>            attach to or create the thread's sandbox
  sbx sessions                   threads cached on this machine (those whose sandbox ended are dropped)
  sbx release <thread>           release this CLI's bindings (the last one ends the sandbox; none is ok)
  sbx exec <thread> [-i] [--cwd d] [--timeout s] -- <cmd> [args…]   streams output, exit code propagates
  sbx cat <thread>:<path>        sbx ls <thread>[:<path>]       sbx rm [-r] <thread>:<path>
  sbx cp <src> <dst>             one file; one side <thread>:<path>, the other local (directories: sync)
  sbx sync <dir> <thread>[:<path>] [--delete] [--watch]   push a directory (new and changed files)
  sbx sync <thread>:[<path>] <dir> [--delete]              pull a directory
                                 --delete removes what the source lacks; --watch pushes until Ctrl-C
  sbx shell <thread> [--id <shell id>] [--observe]   Ctrl-] detaches, leaving the shell running
  sbx doctor [--thread <t>]      check a deployment end to end (broker, key, files, exec, shell)
  sbx mcp [--http <port> [--host h]]   MCP server for this login over stdio (an MCP host's command);
                                 --http: Streamable HTTP at /mcp, each request with its own bearer

  <thread>:<path> is a path in the sandbox, as its commands see it: relative to the workspace
  (thr_1:src/main.py; thr_1: is the workspace itself) or absolute anywhere in the sandbox
  (thr_1:/workspace/src/main.py, thr_1:/tmp/f, thr_1:/etc/os-release); the sandbox user's
  permissions decide, so a write to a read-only place is refused (exit 3), as is /proc.
  exec --cwd takes the same paths. sbx ensure shows the workspace.

  --json on any command prints JSON. Exit codes: 0 ok, 1 failed (exec: the command's own code),
  2 usage, 3 not logged in or key rejected, 4 not found (shell: its sandbox was terminated),
  5 broker or sandbox unreachable.
  doctor exits with the code of its first failed step.
`;

export function help(ctx: CliContext): Promise<number> {
  ctx.stdout.write(HELP);
  return Promise.resolve(EXIT.ok);
}
