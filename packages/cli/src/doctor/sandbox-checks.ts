import { randomBytes, randomInt } from 'node:crypto';
import {
  NotFoundError,
  RefreshingCredentials,
  SandboxClient,
  workspacePathOf,
  type Shell,
} from '@sbx/client';
import type { SessionResponse } from '@sbx/protocol';
import { CLI_RETRY, type LoggedIn } from '../context.js';
import { CheckFailed, Skip } from './step-runner.js';

/** Creating a sandbox starts an agent: slower than any other call. */
const ENSURE_TIMEOUT_MS = 60_000;
const SHELL_TIMEOUT_MS = 20_000;
/** Binary, and larger than one network chunk: a round trip that mangles bytes shows. */
const PROBE_FILE_BYTES = 256 * 1024;
const EXEC_EXIT_CODE = 3;

interface Held {
  readonly session: SessionResponse;
  readonly client: SandboxClient;
  readonly credentials: RefreshingCredentials;
}

/**
 * The dataplane half of `sbx doctor`: two bindings of its own on the thread (a human one
 * under the CLI's actor, with exactly the rights `sbx shell` has, and an agent one,
 * `<actor>.doctor`, for exec), then files, exec and a shell through them, then release.
 * The CLI's thread cache is never touched.
 */
export class SandboxChecks {
  #human: Held | undefined;
  #agent: Held | undefined;
  readonly #marker = randomBytes(6).toString('hex');
  /** Relative: in the workspace, wherever the sandbox's processes see it. */
  readonly #file = `.sbx-doctor-${this.#marker}.bin`;
  readonly #content = randomBytes(PROBE_FILE_BYTES);

  constructor(
    private readonly login: () => LoggedIn,
    private readonly thread: string,
  ) {}

  async ensure(): Promise<string> {
    const actor = this.login().config.actor_id;
    this.#human = await this.#bind({ type: 'human', id: actor });
    this.#agent = await this.#bind({ type: 'agent', id: `${actor}.doctor` });
    const { sandbox } = this.#human.session;
    const workspace = workspacePathOf(this.#human.session);
    return `sandbox ${sandbox.id} (${sandbox.provider}) for thread ${this.thread}, workspace ${workspace}; human: ${grants(this.#human)}; agent: ${grants(this.#agent)}`;
  }

  async write(): Promise<string> {
    const info = await held(this.#human).client.files.write(this.#file, this.#content);
    if (info.size !== this.#content.length)
      throw new CheckFailed(
        `wrote ${this.#content.length} bytes to ${this.#file}, the sandbox has ${info.size}`,
      );
    return `wrote ${info.size} bytes to ${info.path}`;
  }

  async read(): Promise<string> {
    const files = held(this.#human).client.files;
    const back = await files.read(this.#file);
    if (!Buffer.from(back).equals(this.#content))
      throw new CheckFailed(`${this.#file} read back ${back.length} bytes that differ from those written`);
    await files.remove(this.#file);
    return `read back ${back.length} identical bytes, then removed the file`;
  }

  async exec(): Promise<string | Skip> {
    const agent = held(this.#agent);
    if (!grantList(agent).includes('process'))
      return new Skip(`the agent binding may not run commands (granted: ${grants(agent)})`);
    const script = `printf '%s\\n' "$1"; exit ${EXEC_EXIT_CODE}`;
    const result = await agent.client.exec.run({ argv: ['sh', '-c', script, 'sh', this.#marker] });
    const stdout = Buffer.from(result.stdout, result.stdout_encoding === 'base64' ? 'base64' : 'utf8');
    if (stdout.toString('utf8') !== `${this.#marker}\n` || result.exit_code !== EXEC_EXIT_CODE) {
      throw new CheckFailed(
        `sh should print ${this.#marker} and exit ${EXEC_EXIT_CODE}; it printed ${JSON.stringify(stdout.toString('utf8'))} and exited ${String(result.exit_code ?? result.signal)}`,
      );
    }
    return `sh printed the marker and exited ${EXEC_EXIT_CODE} (${result.duration_ms} ms in the sandbox)`;
  }

  async shell(): Promise<string | Skip> {
    const human = held(this.#human);
    if (!grantList(human).includes('shell'))
      return new Skip(`the broker grants no shell to the human binding (granted: ${grants(human)})`);
    const shell = await human.client.openShell({ cols: 80, rows: 24 });
    shell.exited.catch(() => undefined);
    try {
      const [a, b] = [randomInt(10, 99), randomInt(10, 99)];
      // The shell computes the sum, so the echo of the typed line alone cannot match.
      const seen = waitForOutput(shell, `doctor-${a + b}-${this.#marker}`);
      shell.write(`echo "doctor-$((${a}+${b}))-${this.#marker}"\n`);
      await seen;
      return `shell ${shell.id} ran a typed command and its output came back`;
    } finally {
      shell.close();
    }
  }

  /** Releases whatever `ensure` got, even when it failed halfway. */
  async release(): Promise<string | Skip> {
    const holds = [this.#agent, this.#human].filter((h) => h !== undefined);
    if (holds.length === 0) return new Skip('no session to release');
    for (const hold of holds) {
      hold.credentials.close();
      await this.login()
        .broker.release(hold.session.session_id)
        .catch((err: unknown) => {
          if (!(err instanceof NotFoundError)) throw err;
        });
    }
    this.#agent = undefined;
    this.#human = undefined;
    return `released ${holds.length} session(s)`;
  }

  async #bind(actor: { type: 'human' | 'agent'; id: string }): Promise<Held> {
    const { broker } = this.login();
    const session = await broker.ensure(
      { scope: { type: 'thread', id: this.thread }, actor },
      { timeoutMs: ENSURE_TIMEOUT_MS },
    );
    const credentials = new RefreshingCredentials({
      initial: { token: session.token, expiresAt: new Date(session.expires_at) },
      refresh: async () => {
        const answer = await broker.refresh(session.session_id);
        return { token: answer.token, expiresAt: new Date(answer.expires_at) };
      },
      proactive: false,
    });
    const client = new SandboxClient({
      httpBaseUrl: session.dataplane.http_base_url,
      wsBaseUrl: session.dataplane.ws_base_url,
      tokens: credentials,
      retry: CLI_RETRY,
    });
    return { session, client, credentials };
  }
}

function held(hold: Held | undefined): Held {
  if (hold === undefined) throw new Error('no session: the ensure step did not pass');
  return hold;
}

function grantList(hold: Held): readonly string[] {
  return hold.session.credentials.granted_capabilities;
}

function grants(hold: Held): string {
  return grantList(hold).join(' ') || 'nothing';
}

/** Resolves once `expected` has appeared in the shell's output. */
function waitForOutput(shell: Shell, expected: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let seen = '';
    const finish = (settle: () => void): void => {
      clearTimeout(timer);
      stop();
      settle();
    };
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(new CheckFailed(`no "${expected}" from the shell within ${SHELL_TIMEOUT_MS / 1000} s`)),
        ),
      SHELL_TIMEOUT_MS,
    );
    const stop = shell.onData((data) => {
      seen = (seen + data.toString('utf8')).slice(-4096);
      if (seen.includes(expected)) finish(resolve);
    });
    shell.exited.then(
      (exit) =>
        finish(() => reject(new CheckFailed(`the shell exited (${exit.code}) before echoing the marker`))),
      (err: unknown) => finish(() => reject(err instanceof Error ? err : new Error(String(err)))),
    );
  });
}
