import { createReadStream, createWriteStream, statSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { NotFoundError, type SandboxClient } from '@sbx/client';
import { loggedIn, parseCommand, printJson, type CliContext } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { progressStream } from '../progress-bar.js';
import { absoluteRemote, joinRemote, parseRemotePath, type RemotePath } from '../remote-path.js';
import { ThreadSessions } from '../thread-sessions.js';

const USAGE =
  'cp: sbx cp <local> <thread>:<path> | sbx cp <thread>:<path> <local> (<path> relative to the workspace, or absolute: thr_1:/tmp/f)';

/** What `cp -r` would be in scp: directories are `sbx sync`'s. */
const RECURSIVE = new Set(['-r', '-R', '--recursive']);
const SYNC_ADVICE =
  'for a directory use sbx sync <dir> <thread>:<path> (or sbx sync <thread>:<path> <dir> to fetch one)';

/**
 * Copies one file between this machine and a sandbox, streaming (never whole in memory).
 * The remote side is a sandbox path (remote-path.ts), in the workspace or anywhere the
 * sandbox's user may read or write (`t1:/tmp/x.txt`); what is reported is the agent's
 * absolute name of it (`t1:/workspace/dir/x.txt`).
 */
export async function cp(ctx: CliContext, args: readonly string[]): Promise<number> {
  const end = args.indexOf('--'); // past it, `-r` is a file's name
  const recursive = args.slice(0, end === -1 ? undefined : end).find((arg) => RECURSIVE.has(arg));
  if (recursive !== undefined) throw new UsageError(`cp: ${recursive}: cp copies one file; ${SYNC_ADVICE}`);
  const { values, positionals } = parseCommand('cp', args, { json: { type: 'boolean' } });
  const [src, dst] = positionals;
  if (src === undefined || dst === undefined || positionals.length > 2) throw new UsageError(USAGE);
  const from = parseRemotePath(src);
  const to = parseRemotePath(dst);
  if ((from === undefined) === (to === undefined))
    throw new UsageError(`${USAGE} (exactly one side is remote)`);
  const remote = from ?? to;
  if (remote === undefined) throw new UsageError(USAGE);
  if (to !== undefined && isLocalDirectory(src))
    throw new UsageError(
      `cp: ${src} is a directory and cp copies one file: sbx sync ${src} ${dst} copies it`,
    );
  const { config, broker } = loggedIn(ctx);
  const sandbox = await new ThreadSessions(broker, ctx.store, config.actor_id).sandbox(
    remote.thread,
    'human',
  );
  const result =
    to === undefined ? await download(ctx, sandbox, remote, dst) : await upload(ctx, sandbox, src, to);
  if (values.json === true) printJson(ctx, result);
  return EXIT.ok;
}

interface Copied {
  readonly from: string;
  readonly to: string;
  readonly bytes: number;
}

async function upload(
  ctx: CliContext,
  sandbox: SandboxClient,
  local: string,
  remote: RemotePath,
): Promise<Copied> {
  const size = localFileSize(local);
  const target = (await isRemoteDirectory(sandbox, remote.path))
    ? joinRemote(remote.path, path.basename(local))
    : remote.path;
  const source = createReadStream(local).pipe(progressStream(ctx.stderr, path.basename(local), size));
  const info = await sandbox.files.write(target, Readable.toWeb(source) as ReadableStream<Uint8Array>);
  return { from: local, to: `${remote.thread}:${info.path}`, bytes: info.size };
}

async function download(
  ctx: CliContext,
  sandbox: SandboxClient,
  remote: RemotePath,
  local: string,
): Promise<Copied> {
  const info = await sandbox.files.stat(remote.path);
  if (info.type === 'dir')
    throw new UsageError(
      `cp: ${remote.thread}:${remote.path} is a directory and cp copies one file: ` +
        `sbx sync ${remote.thread}:${remote.path} ${local} copies it`,
    );
  // The name as the user wrote it (`d/x.txt/` and `d/x.txt/.` too), not as the sandbox answers it.
  const name = path.posix.basename(absoluteRemote('/', remote.path));
  const target = isLocalDirectory(local) && name !== '' ? path.join(local, name) : local;
  const stream = await sandbox.files.readStream(remote.path);
  await pipeline(
    Readable.fromWeb(stream),
    progressStream(ctx.stderr, path.basename(target), info.size),
    createWriteStream(target),
  );
  return { from: `${remote.thread}:${info.path}`, to: target, bytes: statSync(target).size };
}

function localFileSize(local: string): number {
  try {
    const stat = statSync(local);
    if (!stat.isFile()) throw new UsageError(`cp: ${local} is not a file (one file at a time)`);
    return stat.size;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new NotFoundError(`cp: ${local}: no such file`);
  }
}

function isLocalDirectory(local: string): boolean {
  try {
    return statSync(local).isDirectory();
  } catch {
    return false;
  }
}

async function isRemoteDirectory(sandbox: SandboxClient, remotePath: string): Promise<boolean> {
  if (remotePath.endsWith('/')) return true;
  try {
    return (await sandbox.files.stat(remotePath)).type === 'dir';
  } catch (err) {
    if (err instanceof NotFoundError) return false;
    throw err;
  }
}
