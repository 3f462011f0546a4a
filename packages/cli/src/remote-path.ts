import { UsageError } from './exit-codes.js';

/** `<thread>:<path>` as scp writes it; the path is in the sandbox's workspace (`/` is its root). */
export interface RemotePath {
  readonly thread: string;
  readonly path: string;
}

/**
 * A remote path, or undefined for a local one. As with scp, a colon before any `/` makes it
 * remote (`t1:/a`, `t1:a`), so `./x:y` and `/tmp/a:b` stay local.
 */
export function parseRemotePath(text: string): RemotePath | undefined {
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  const slash = text.indexOf('/');
  if (slash !== -1 && slash < colon) return undefined;
  const rest = text.slice(colon + 1);
  return { thread: text.slice(0, colon), path: rest === '' ? '/' : rest.startsWith('/') ? rest : `/${rest}` };
}

export function requireRemotePath(command: string, text: string | undefined): RemotePath {
  const remote = text === undefined ? undefined : parseRemotePath(text);
  if (remote === undefined)
    throw new UsageError(`${command}: expected <thread>:<path>, e.g. thr_1:/src/main.py`);
  return remote;
}
