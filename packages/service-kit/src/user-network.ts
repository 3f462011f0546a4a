import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { SbxError } from '@sbx/protocol';
import { killGroup } from './kill-group.js';

/** A user-mode network stack attached to one sandbox's network namespace. */
export interface UserNetwork {
  readonly exited: Promise<void>;
  close(): void;
}

const READY_TIMEOUT_MS = 10_000;

/**
 * slirp4netns gives the sandbox a tap device with outbound NAT, and nothing else: with
 * `--disable-host-loopback` the host's 127.0.0.1 (Postgres, Redis, the broker, other
 * agents) is unreachable from inside, and nothing inside can listen on a host port.
 * It runs as the caller (the agent: the sandbox's own user, in the agent's view, where a
 * root broker binds a tun node it may open) under its seccomp filter. Not
 * `--enable-sandbox`: that needs slirp4netns to be root in its own user namespace, and
 * joining the sandbox's namespace from such a one is refused; as the sandbox's own
 * unprivileged user it holds nothing the sandbox lacks but the host's network namespace
 * (docs/security.md, "Known limits").
 */
export async function attachUserNetwork(slirp4netnsPath: string, initPid: number): Promise<UserNetwork> {
  const slirp = spawn(
    slirp4netnsPath,
    [
      '--configure',
      '--mtu=65520',
      '--disable-host-loopback',
      '--enable-seccomp',
      `--userns-path=/proc/${initPid}/ns/user`,
      '--ready-fd=3',
      // Ends slirp4netns with its parent: the pipe's other end closes when the agent dies.
      '--exit-fd=4',
      String(initPid),
      'tap0',
    ],
    {
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
    },
  );
  slirp.on('error', () => undefined);
  const exited = once(slirp, 'exit').then(() => undefined);
  const readyFd = slirp.stdio[3];
  const ready = readyByte(readyFd instanceof Readable ? readyFd : null);
  const stderr = collect(slirp.stderr);
  const timeout = new Promise<false>((resolve) => setTimeout(resolve, READY_TIMEOUT_MS, false).unref());
  if (!(await Promise.race([ready, exited.then(() => false), timeout]))) {
    killGroup(slirp);
    throw new SbxError(
      'PROVIDER_UNAVAILABLE',
      `the sandbox's network could not be attached (${slirp4netnsPath}): ${stderr().trim() || 'no ready signal'}`,
    );
  }
  return { exited, close: () => killGroup(slirp) };
}

function readyByte(stream: Readable | null): Promise<boolean> {
  return new Promise((resolve) => {
    if (stream === null) return resolve(false);
    stream.once('data', () => resolve(true));
    stream.once('end', () => resolve(false));
    stream.once('error', () => resolve(false));
  });
}

function collect(stream: Readable | null): () => string {
  let text = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    if (text.length < 4096) text += chunk;
  });
  return () => text;
}
