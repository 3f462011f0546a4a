// slirp4netns (the user-mode network of a network-on sandbox) runs as the agent, the
// sandbox's own user, and opens /dev/net/tun, which hosts often keep root's alone (0600).
import { execFile } from 'node:child_process';
import { chown, rm, stat } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);
const HOST_TUN = '/dev/net/tun';
export const TUN_INSIDE = '/dev/net/tun';
const TUN_MAJOR = '10';
const TUN_MINOR = '200';

/** A device node bound into the agent's view: where it is on the host, where the agent sees it. */
export interface ViewDevice {
  readonly host: string;
  readonly inside: string;
}

/**
 * A root broker makes a node of the tun device for one sandbox user (0660, its group, in
 * a directory only that user and root can reach) rather than opening the host's to
 * everyone. Creating an interface still needs CAP_NET_ADMIN in a network namespace, which
 * the agent has only in its sandbox's. Undefined when the node cannot be made.
 */
export async function tunNodeFor(file: string, gid: number): Promise<ViewDevice | undefined> {
  try {
    await rm(file, { force: true });
    await run('mknod', ['-m', '0660', file, 'c', TUN_MAJOR, TUN_MINOR]);
    await chown(file, 0, gid);
    return { host: file, inside: TUN_INSIDE };
  } catch {
    return undefined;
  }
}

/** A broker that is not root hands on the host's node: usable only where it is open to all. */
export async function hostTun(): Promise<ViewDevice | undefined> {
  return (await stat(HOST_TUN).catch(() => undefined)) === undefined
    ? undefined
    : { host: HOST_TUN, inside: TUN_INSIDE };
}
