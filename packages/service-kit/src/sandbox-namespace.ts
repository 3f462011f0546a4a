import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { SbxError } from '@sbx/protocol';
import { bubblewrapConfinementArgs, type BubblewrapConfinement } from './bubblewrap.js';
import { killGroup } from './kill-group.js';
import { attachUserNetwork, type UserNetwork } from './user-network.js';

export interface SandboxNamespaceOptions extends BubblewrapConfinement {
  readonly bwrapPath: string;
  /** On: outbound traffic through slirp4netns, never to the host's loopback. Off: loopback only. */
  readonly network: boolean;
  readonly slirp4netnsPath?: string;
  /**
   * The unprivileged host user that owns the sandbox, for a root caller that runs outside
   * any sandbox view (tests); omitted: the caller's own (the agent, never root).
   */
  readonly runAs?: { readonly uid: number; readonly gid: number };
}

/** A program to run inside the sandbox, as the caller describes it. */
export interface JoinSpec {
  readonly file: string;
  readonly args: readonly string[];
  /** The working directory as processes in the sandbox see it. */
  readonly cwd: string;
  /** The user's environment: set inside the sandbox only, never on the launcher itself. */
  readonly env: Readonly<Record<string, string>>;
}

/** What to spawn on the host: a fixed, minimal launcher that joins the sandbox. */
export interface JoinPlan {
  readonly file: string;
  readonly args: string[];
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly uid?: number;
  readonly gid?: number;
}

/** The launcher's own environment: nothing of the caller's (LD_PRELOAD, GCONV_PATH …) reaches it. */
const LAUNCHER_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };
const NSENTER = '/usr/bin/nsenter';
/** Run inside the sandbox after joining it, so user variables are set only there. */
const INSIDE_SETPRIV = '/usr/bin/setpriv';
const INSIDE_ENV = '/usr/bin/env';
const ENV_NAME = /^[^=\0]+$/;

interface HolderInfo {
  readonly 'child-pid': number;
}

/**
 * One sandbox's namespaces, held by a long-lived `bwrap … sleep infinity`, and the way
 * into them. Every user process (exec, background, shell) joins these namespaces through
 * nsenter as the sandbox's host user, so all of them share one pid, network and /tmp view;
 * when the holder ends, the kernel kills everything left in its pid namespace.
 */
export class SandboxNamespace {
  readonly #holder: ChildProcess;
  readonly #network: UserNetwork | undefined;
  readonly #runAs: SandboxNamespaceOptions['runAs'];
  /** The host pid of the namespace's init: every join targets it. */
  readonly initPid: number;
  /** Settles when the holder has ended (the sandbox is then gone). */
  readonly exited: Promise<void>;

  private constructor(
    holder: ChildProcess,
    initPid: number,
    network: UserNetwork | undefined,
    runAs: SandboxNamespaceOptions['runAs'],
  ) {
    this.#holder = holder;
    this.initPid = initPid;
    this.#network = network;
    this.#runAs = runAs;
    this.exited =
      holder.exitCode !== null || holder.signalCode !== null
        ? Promise.resolve()
        : once(holder, 'exit').then(() => undefined);
  }

  static async start(options: SandboxNamespaceOptions): Promise<SandboxNamespace> {
    const holder = spawnHolder(options);
    const initPid = await holderInitPid(holder);
    let network: UserNetwork | undefined;
    try {
      if (options.network)
        network = await attachUserNetwork(options.slirp4netnsPath ?? '/usr/bin/slirp4netns', initPid);
    } catch (err) {
      killGroup(holder);
      throw err;
    }
    return new SandboxNamespace(holder, initPid, network, options.runAs);
  }

  /**
   * nsenter joins the user namespace as its owner (so it gains no host privilege), then
   * the others; inside, setpriv forbids any later privilege gain and env sets exactly
   * the user's variables and working directory. `-w` and `-r` take the init's own root
   * and directory, which live in the sandbox's mount namespace, never the host's.
   */
  joinPlan(spec: JoinSpec): JoinPlan {
    if (spec.file === '' || spec.file.includes('='))
      throw new SbxError('BAD_REQUEST', 'the program name must be non-empty and must not contain "="');
    const env = Object.entries(spec.env).map(([name, value]) => {
      if (!ENV_NAME.test(name)) throw new SbxError('BAD_REQUEST', `invalid environment variable name`);
      return `${name}=${value}`;
    });
    const inside = [INSIDE_SETPRIV, '--no-new-privs', '--', INSIDE_ENV, '-i', '-C', spec.cwd, '--'];
    return {
      file: NSENTER,
      args: [
        '-t',
        String(this.initPid),
        '-U',
        '--preserve-credentials',
        '-m',
        '-n',
        '-p',
        '-i',
        '-u',
        '-r',
        '-w',
        '--',
        ...inside,
        ...env,
        spec.file,
        ...spec.args,
      ],
      cwd: '/',
      env: { ...LAUNCHER_ENV },
      ...this.#runAs,
    };
  }

  /** Ends the sandbox: the holder (and with it every process inside) and its network. */
  async close(): Promise<void> {
    this.#network?.close();
    killGroup(this.#holder);
    await this.exited;
    await this.#network?.exited;
  }
}

const READY_LINE = 'echo sandbox-ready; exec sleep infinity';

/**
 * bwrap runs as the sandbox's user, who must be able to walk down to the workspace (the
 * directories above it are traversable, not listable; docs/security.md).
 */
function spawnHolder(options: SandboxNamespaceOptions): ChildProcess {
  const args = [...bubblewrapConfinementArgs(options), '--info-fd', '3'];
  // A user-mode network answers DNS at 10.0.2.3; the host's resolver address means nothing inside.
  if (options.network) args.push('--ro-bind-data', '4', '/etc/resolv.conf');
  // The line tells that the mounts are done: bwrap reports the init's pid before it sets them up.
  const holder = spawn(options.bwrapPath, [...args, '--', '/bin/sh', '-c', READY_LINE], {
    cwd: '/',
    env: { ...LAUNCHER_ENV },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe', options.network ? 'pipe' : 'ignore'],
    ...options.runAs,
  });
  holder.on('error', () => undefined);
  const resolvConf = holder.stdio[4];
  if (resolvConf instanceof Writable) {
    resolvConf.on('error', () => undefined);
    resolvConf.end('nameserver 10.0.2.3\n');
  }
  return holder;
}

/** bwrap writes `{"child-pid": …}` on the info fd once the namespaces exist. */
async function holderInitPid(holder: ChildProcess): Promise<number> {
  const stderr = captured(holder.stderr, () => false);
  const exitedEarly = once(holder, 'exit').then(() => undefined);
  const info = captured(streamOf(holder.stdio[3]), (text) => parseInfo(text) !== undefined);
  const ready = captured(holder.stdout, (text) => text.includes('sandbox-ready\n'));
  const [hasInfo, isReady] = await Promise.race([
    Promise.all([info.found, ready.found]),
    exitedEarly.then(() => [false, false] as const),
  ]);
  const parsed = parseInfo(info.text());
  if (hasInfo && isReady && parsed !== undefined) return parsed['child-pid'];
  killGroup(holder);
  await Promise.race([stderr.found, exitedEarly]);
  throw new SbxError(
    'PROVIDER_UNAVAILABLE',
    `the sandbox could not be created: ${stderr.text().trim() || 'bwrap ended before the sandbox existed'}`,
  );
}

function streamOf(stdio: unknown): Readable | null {
  return stdio instanceof Readable ? stdio : null;
}

/** The holder prints a line or two: anything past this is not kept (nor is anything after start). */
const CAPTURE_LIMIT = 4096;

/**
 * The first bytes of a stream, and whether `test` held for them before it ended. The
 * stream is drained to its end without keeping more, so a sandbox writing to it cannot
 * grow the agent's memory.
 */
function captured(stream: Readable | null, test: (text: string) => boolean) {
  let text = '';
  const found = new Promise<boolean>((resolve) => {
    if (stream === null) return resolve(false);
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      if (text.length >= CAPTURE_LIMIT) return;
      text += chunk.slice(0, CAPTURE_LIMIT - text.length);
      if (test(text)) resolve(true);
    });
    stream.on('end', () => resolve(test(text)));
    stream.on('error', () => resolve(false));
  });
  return { found, text: () => text };
}

function parseInfo(text: string): HolderInfo | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || !('child-pid' in value)) return undefined;
    const pid = value['child-pid'];
    return typeof pid === 'number' && Number.isInteger(pid) && pid > 1 ? { 'child-pid': pid } : undefined;
  } catch {
    return undefined;
  }
}
