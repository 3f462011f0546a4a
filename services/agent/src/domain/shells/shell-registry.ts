import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SbxError } from '@sbx/protocol';
import type { Logger } from '@sbx/service-kit';
import type { Launcher } from '../../adapters/launcher.js';
import type { PathGuard } from '../files/path-guard.js';
import type { PtySpawner, TerminalSize } from '../../adapters/pty.js';
import { DrainMarkerScanner, newDrainNonce, wrapForDrain } from './drain-handshake.js';
import { resolveWorkingDirectory } from '../exec/working-directory.js';
import { shellEnvironment } from './shell-launch.js';
import type { ResolvedShellLimits } from './shell-limits.js';
import { ShellSession, type ShellSessionHooks } from './shell-session.js';

export interface ShellRegistryDeps {
  readonly workspace: PathGuard;
  readonly launcher: Launcher;
  readonly spawnPty: PtySpawner;
  readonly logger: Logger;
  /** The client policy's variables, read at each open; absent: none. */
  readonly sandboxEnv?: (() => Readonly<Record<string, string>>) | undefined;
}

export interface NewShell {
  readonly size: TerminalSize;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Who asked (the token's `sub`), for the log. */
  readonly requestedBy: string;
}

/** Unguessable: the id is all a token holder of this sandbox needs to attach. */
function newShellId(): string {
  return `sh_${randomBytes(18).toString('base64url')}`;
}

/**
 * The sandbox's shells. They belong to the sandbox, not to a connection or a user:
 * any client whose token grants `shell` or `shell:ro` may attach by id.
 */
export class ShellRegistry {
  readonly #attachable = new Map<string, ShellSession>();
  readonly #running = new Set<ShellSession>();
  readonly #hooks: ShellSessionHooks;
  #closed = false;

  constructor(
    private readonly deps: ShellRegistryDeps,
    private readonly limits: ResolvedShellLimits,
  ) {
    const log = deps.logger;
    this.#hooks = {
      exited: (session, exit) => {
        this.#running.delete(session);
        log.info({ shell_session_id: session.id, code: exit.code, signal: exit.signal }, 'shell exited');
      },
      abandoned: (session, reason) => {
        this.#attachable.delete(session.id);
        log.info({ shell_session_id: session.id, reason }, 'shell released');
      },
      slowClientDropped: (session) =>
        log.warn({ shell_session_id: session.id }, 'slow shell client dropped; it may reattach'),
    };
  }

  /** Shells whose process is running, attached or not. */
  get runningCount(): number {
    return this.#running.size;
  }

  get(id: string): ShellSession | undefined {
    return this.#attachable.get(id);
  }

  async create(request: NewShell): Promise<ShellSession> {
    // The same confinement as exec: inside the workspace after every symlink is followed.
    const cwd = await resolveWorkingDirectory(this.deps.workspace, request.cwd);
    if (this.#closed) throw new SbxError('BACKEND_UNAVAILABLE', 'the agent is shutting down');
    if (this.#running.size >= this.limits.maxShells) {
      throw new SbxError('RATE_LIMITED', `at most ${this.limits.maxShells} shells may run at once`, {
        details: { max_shells: this.limits.maxShells },
      });
    }
    const nonce = newDrainNonce();
    const program = wrapForDrain(this.limits.program, nonce);
    const env = shellEnvironment(
      {
        home: this.deps.workspace.workspace,
        path: this.limits.path,
        lang: this.limits.lang,
        shell: this.limits.program.file,
      },
      request.env,
      this.deps.sandboxEnv?.(),
    );
    const plan = this.deps.launcher.plan({
      file: program.file,
      args: program.args,
      cwd,
      env,
      interactive: true,
    });
    const pty = this.deps.spawnPty(plan, request.size);
    const session = new ShellSession(
      newShellId(),
      pty,
      new DrainMarkerScanner(nonce),
      this.limits,
      this.#hooks,
    );
    this.#attachable.set(session.id, session);
    this.#running.add(session);
    this.deps.logger.info(
      { shell_session_id: session.id, sub: request.requestedBy, launcher: this.deps.launcher.kind },
      'shell started',
    );
    return session;
  }

  /** Ends every shell (SIGHUP, then SIGKILL after the grace) and waits for them to be gone. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    const running = [...this.#running];
    for (const session of running) session.terminate();
    await Promise.race([
      Promise.all(running.map((session) => session.whenExited)),
      sleep(this.limits.killGraceMs + 1000, undefined, { ref: false }),
    ]);
    for (const session of [...this.#attachable.values(), ...running]) session.dispose();
    this.#attachable.clear();
  }
}
