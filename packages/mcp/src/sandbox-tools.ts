import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SbxError } from '@sbx/protocol';
import { z } from 'zod';
import type { CallerEnvironments } from './environments.js';
import { guarded, toolResult } from './results.js';

const thread = z
  .string()
  .min(1)
  .max(200)
  .optional()
  .describe('The thread; default: the environment acquired last by this caller');
const sandboxPath = z
  .string()
  .min(1)
  .max(4096)
  .describe(
    "Sandbox path, as the sandbox's commands see it: relative to the workspace (src/main.py), or " +
      'absolute anywhere in the sandbox (/workspace/src/main.py, /tmp/out.txt, /etc/os-release); ' +
      'a write where the sandbox user may not write (e.g. a read-only /etc) is refused; /proc is not served',
  );

/** UTF-8 text when the bytes are valid UTF-8, base64 otherwise. */
function decoded(bytes: Uint8Array): { content: string; encoding: 'utf-8' | 'base64' } {
  try {
    return { content: new TextDecoder('utf-8', { fatal: true }).decode(bytes), encoding: 'utf-8' };
  } catch {
    return { content: Buffer.from(bytes).toString('base64'), encoding: 'base64' };
  }
}

const namesOf = (text: string): string[] => text.split('/').filter((name) => name !== '' && name !== '.');

/**
 * The agent's absolute form of a sandbox path (docs/files.md), as write_file and list_files
 * answer it: `a.txt` → `/workspace/a.txt`, `/tmp//x` → `/tmp/x`. The agent read the file, so
 * the path has no `..`; empty and `.` segments go, as the agent drops them.
 */
function absolutePath(workspace: string, path: string): string {
  const segments = path.startsWith('/') ? namesOf(path) : [...namesOf(workspace), ...namesOf(path)];
  return `/${segments.join('/')}`;
}

/** Files and exec of the thread's sandbox, through the SDK's SandboxClient (docs/mcp.md#tools). */
export function registerSandboxTools(
  server: McpServer,
  environments: CallerEnvironments,
  onInternal?: (err: unknown) => void,
): void {
  server.registerTool(
    'read_file',
    {
      title: 'Read a file',
      description: 'Read a file of the sandbox (text as is, other bytes as base64).',
      inputSchema: { thread_id: thread, path: sandboxPath },
      annotations: { readOnlyHint: true },
    },
    ({ thread_id, path }) =>
      guarded(async () => {
        const { bytes, workspace } = await environments.withSandbox(thread_id, async (sandbox, session) => ({
          bytes: await sandbox.files.read(path),
          workspace: session.workspacePath,
        }));
        const { content, encoding } = decoded(bytes);
        const absolute = absolutePath(workspace, path);
        return toolResult({ path: absolute, content, encoding, size: bytes.byteLength }, content);
      }, onInternal),
  );

  server.registerTool(
    'write_file',
    {
      title: 'Write a file',
      description: 'Write a file of the sandbox atomically (parents are created).',
      inputSchema: {
        thread_id: thread,
        path: sandboxPath,
        content: z.string().describe('The new content'),
        encoding: z.enum(['utf-8', 'base64']).default('utf-8'),
      },
    },
    ({ thread_id, path, content, encoding }) =>
      guarded(async () => {
        const data = encoding === 'base64' ? new Uint8Array(Buffer.from(content, 'base64')) : content;
        const info = await environments.withSandbox(thread_id, (sandbox) => sandbox.files.write(path, data));
        return toolResult({ path: info.path, size: info.size, etag: info.etag ?? null });
      }, onInternal),
  );

  server.registerTool(
    'list_files',
    {
      title: 'List a directory',
      description: 'List a directory of the sandbox (default: the workspace).',
      inputSchema: { thread_id: thread, path: sandboxPath.default('.') },
      annotations: { readOnlyHint: true },
    },
    ({ thread_id, path }) =>
      guarded(async () => {
        const listing = await environments.withSandbox(thread_id, (sandbox) => sandbox.files.list(path));
        return toolResult({ path: listing.path, entries: listing.entries });
      }, onInternal),
  );

  server.registerTool(
    'run_command',
    {
      title: 'Run a command',
      description:
        'Run a command in the sandbox to completion; returns exit code, stdout and stderr. ' +
        'A non-zero exit code is a result, not a tool error.',
      inputSchema: {
        thread_id: thread,
        command: z.string().min(1).optional().describe('A shell command line (sh -c)'),
        argv: z.array(z.string()).min(1).optional().describe('Program and arguments, instead of command'),
        cwd: sandboxPath.optional(),
        stdin: z.string().optional(),
        timeout_ms: z.number().int().positive().max(3_600_000).optional(),
      },
    },
    ({ thread_id, command, argv, cwd, stdin, timeout_ms }) =>
      guarded(async () => {
        if ((command === undefined) === (argv === undefined)) {
          throw new SbxError('BAD_REQUEST', 'give exactly one of command or argv');
        }
        const program = argv === undefined ? { cmd: command ?? '' } : { argv };
        const options = {
          ...(cwd === undefined ? {} : { cwd }),
          ...(stdin === undefined ? {} : { stdin }),
          ...(timeout_ms === undefined ? {} : { timeoutMs: timeout_ms }),
        };
        const r = await environments.withSandbox(thread_id, (sandbox) => sandbox.exec.run(program, options));
        return toolResult({
          exit_code: r.exit_code,
          signal: r.signal,
          stdout: r.stdout,
          stderr: r.stderr,
          stdout_encoding: r.stdout_encoding,
          stderr_encoding: r.stderr_encoding,
          timed_out: r.timed_out,
          truncated: r.stdout_truncated || r.stderr_truncated,
          duration_ms: r.duration_ms,
        });
      }, onInternal),
  );
}
