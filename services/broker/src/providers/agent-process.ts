import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { constants } from 'node:os';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { scrubText, type Logger } from '@sbx/service-kit';
import { listeningUrlOf } from './agent-readiness.js';

/** How to run an agent: a program and its arguments (never secrets: argv is world-readable). */
export interface AgentCommand {
  readonly file: string;
  readonly args: readonly string[];
}

export interface AgentExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface AgentProcessOptions {
  readonly command: AgentCommand;
  /** The agent's whole environment: nothing of the broker's (database URL, master key) leaks in. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly sandboxId: string;
  readonly logger: Logger;
  /** Descriptors 3, 4 … of the child: an open descriptor to hand down, or a pipe to read. */
  readonly extraFds?: readonly (number | 'pipe')[];
  /** The descriptor on which bwrap reports `{"child-pid": …}`: the agent's own pid, under bwrap. */
  readonly infoFd?: number;
}

const MAX_LOGGED_LINE = 4096;
const RECENT_LINES = 20;
const STDERR_SETTLE_MS = 200;
/** What `keyctl session -` (agent-command.ts) says before the agent runs: not the agent's last words. */
const LAUNCHER_NOTICE = /^Joined session keyring: \d+$/;

/**
 * One agent child process in its own process group (so a signal reaches the agent
 * and anything it left in its group). Its stdout and stderr are drained line by line
 * into the broker's log at debug level; its stdin stays open as a lifeline (see
 * agent-bundle.ts). The first `agent listening` line on stdout gives its URL.
 */
export class AgentProcess {
  readonly pid: number | undefined;
  /** Resolves once the process has ended (or never started). */
  readonly exited: Promise<AgentExit>;
  /** Resolves with the agent's base URL; rejects if it ends first. */
  readonly listening: Promise<string>;
  #exit: AgentExit | undefined;
  #spawnError: Error | undefined;
  /** The agent's own pid when a launcher (bwrap) stands between it and `pid`. */
  #agentPid: number | undefined;
  readonly #recent: string[] = [];
  readonly #child: ChildProcess;

  constructor(options: AgentProcessOptions) {
    this.#child = spawn(options.command.file, options.command.args, {
      cwd: options.cwd,
      env: { ...options.env },
      stdio: ['pipe', 'pipe', 'pipe', ...(options.extraFds ?? [])],
      detached: true,
    });
    this.pid = this.#child.pid;
    if (options.infoFd !== undefined) this.#readAgentPid(this.#child.stdio[options.infoFd]);
    // Broken lifeline writes are expected once the agent is gone.
    this.#child.stdin?.on('error', () => undefined);
    const launcherBetween = options.infoFd !== undefined;
    this.exited = new Promise((resolve) => {
      this.#child.once('exit', (code, signal) =>
        resolve((this.#exit = launcherBetween ? agentExitOf(code, signal) : { code, signal })),
      );
      this.#child.on('error', (err) => {
        this.#spawnError ??= err;
        if (this.pid === undefined) resolve((this.#exit = { code: null, signal: null }));
      });
    });
    this.listening = new Promise((resolve, reject) => {
      this.#drain(this.#child.stdout, 'stdout', options, (line) => {
        const url = listeningUrlOf(line);
        if (url !== undefined) resolve(url);
      });
      this.#drain(this.#child.stderr, 'stderr', options, () => undefined);
      // Its last words may still be in the pipe when the exit is reported.
      const stderr = this.#child.stderr;
      const stderrEnded = stderr === null ? Promise.resolve() : once(stderr, 'close').catch(() => undefined);
      void this.exited
        .then(() => Promise.race([stderrEnded, sleep(STDERR_SETTLE_MS)]))
        .then(() => reject(new Error(this.describeFailure())));
    });
    // Rejections here are read through `listening` by whoever waits for it.
    this.listening.catch(() => undefined);
  }

  get exit(): AgentExit | undefined {
    return this.#exit;
  }

  /** The agent's own pid while it runs (past a launcher bwrap forks it from); undefined once it ended. */
  get agentPid(): number | undefined {
    return this.alive ? (this.#agentPid ?? this.pid) : undefined;
  }

  get alive(): boolean {
    return this.pid !== undefined && this.#exit === undefined;
  }

  /** Why the agent ended, with its last lines of output (scrubbed) for the operator. */
  describeFailure(): string {
    if (this.#spawnError !== undefined) return `agent could not be started: ${this.#spawnError.message}`;
    const exit = this.#exit;
    const how =
      exit === undefined
        ? 'is running'
        : exit.signal === null
          ? `exited with code ${exit.code}`
          : `was killed by ${exit.signal}`;
    const tail = this.#recent.slice(-3).join(' | ');
    return tail === '' ? `agent ${how}` : `agent ${how}: ${tail}`;
  }

  /** Synchronous, for `process.on('exit')`: signals the running agent's whole process group. */
  signalGroup(signal: NodeJS.Signals): void {
    // Never signal a group whose leader is gone: its number may belong to someone else by now.
    if (this.alive) this.#killGroup(signal);
  }

  /**
   * SIGTERM to the agent itself (it stops its user processes; a launcher that bwrap left
   * in between would die of it at once and take the agent down unasked), SIGKILL to the
   * whole group after `graceMs`, then waits for the end.
   */
  async terminate(graceMs: number): Promise<AgentExit> {
    if (!this.alive) return this.exited;
    if (graceMs > 0 && this.#agentPid !== undefined) this.#signal(this.#agentPid, 'SIGTERM');
    else this.#killGroup(graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
    const grace = new AbortController();
    const ended = await Promise.race([
      this.exited.then(() => true),
      sleep(graceMs, false, { signal: grace.signal }).catch(() => false),
    ]);
    grace.abort();
    if (!ended) this.#killGroup('SIGKILL');
    const exit = await this.exited;
    // Just reaped, so the number is still ours: whatever the agent left in its group goes too.
    this.#killGroup('SIGKILL');
    return exit;
  }

  #killGroup(signal: NodeJS.Signals): void {
    if (this.pid !== undefined) this.#signal(-this.pid, signal);
  }

  #signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(pid, signal);
    } catch {
      // ESRCH: already gone.
    }
  }

  #readAgentPid(stream: unknown): void {
    if (!(stream instanceof Readable)) return;
    let text = '';
    stream.setEncoding('utf8');
    stream.on('error', () => undefined);
    stream.on('data', (chunk: string) => {
      if (text.length < 4096) text += chunk;
      const pid = /"child-pid":\s*(\d+)/.exec(text)?.[1];
      if (pid !== undefined && this.alive) this.#agentPid ??= Number(pid);
    });
  }

  #drain(
    stream: Readable | null,
    name: string,
    options: AgentProcessOptions,
    onLine: (line: string) => void,
  ): void {
    if (stream === null) return;
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    lines.on('line', (raw) => {
      onLine(raw);
      // The agent's logger scrubs tokens already; scrubbing again costs little and guards the broker's log.
      const line = scrubText(raw.length > MAX_LOGGED_LINE ? `${raw.slice(0, MAX_LOGGED_LINE)}…` : raw);
      if (name === 'stderr' && !LAUNCHER_NOTICE.test(line)) this.#recent.push(line.slice(0, 300));
      if (this.#recent.length > RECENT_LINES) this.#recent.shift();
      if (options.logger.isLevelEnabled('debug'))
        options.logger.debug(
          { sandbox_id: options.sandboxId, stream: name, agent: structured(line) },
          'agent output',
        );
    });
  }
}

function isSignal(name: string): name is NodeJS.Signals {
  return name in constants.signals;
}

/** bwrap ends with 128 + n when the agent died of signal n: report the agent's own end. */
function agentExitOf(code: number | null, signal: NodeJS.Signals | null): AgentExit {
  if (code === null || code <= 128) return { code, signal };
  const name = Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0];
  return name === undefined || !isSignal(name) ? { code, signal } : { code: null, signal: name };
}

/** The agent logs JSON: keep it structured in the broker's log instead of a quoted string. */
function structured(line: string): unknown {
  if (!line.startsWith('{')) return line;
  try {
    const parsed: unknown = JSON.parse(line);
    return parsed;
  } catch {
    return line;
  }
}
