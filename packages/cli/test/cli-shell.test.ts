import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';
import { CliStore } from '../src/store.js';
import { SBX_BIN, Tmux, sbxRunner, type SbxRunner } from './support.js';

const SLOW = 120_000;
let real: RealBroker;
let cli: SbxRunner;
const tmux = new Tmux();
let relay: OutageRelay | undefined;

/**
 * A TCP relay in front of an agent that plays a network outage: `cut` drops every
 * connection and refuses new ones, `hold` accepts them but lets nothing through, and
 * `restore` connects what was held and relays again.
 */
class OutageRelay {
  connections = 0;
  refused = 0;
  #state: 'open' | 'refusing' | 'holding' = 'open';
  readonly #live = new Set<Socket>();
  readonly #held: Socket[] = [];

  private constructor(
    private readonly server: Server,
    private readonly target: { readonly host: string; readonly port: number },
  ) {
    server.on('connection', (client) => this.#accept(client));
  }

  static async start(target: URL): Promise<OutageRelay> {
    const started = new OutageRelay(createServer(), { host: target.hostname, port: Number(target.port) });
    await new Promise<void>((resolve) => started.server.listen(0, '127.0.0.1', resolve));
    return started;
  }

  get port(): number {
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('relay not listening');
    return address.port;
  }

  cut(): void {
    this.#state = 'refusing';
    for (const socket of this.#live) socket.destroy();
  }

  hold(): void {
    this.#state = 'holding';
  }

  restore(): void {
    this.#state = 'open';
    for (const client of this.#held.splice(0)) this.#relay(client);
  }

  async close(): Promise<void> {
    this.cut();
    for (const client of this.#held.splice(0)) client.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    client.on('error', () => undefined);
    if (this.#state === 'refusing') {
      this.refused++;
      client.destroy();
    } else if (this.#state === 'holding') {
      client.pause();
      this.#held.push(client);
    } else this.#relay(client);
  }

  #relay(client: Socket): void {
    if (client.destroyed) return;
    this.connections++;
    const upstream = connect(this.target.port, this.target.host);
    for (const socket of [client, upstream]) {
      this.#live.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.#live.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  }
}

/** The numbers of the lines `N<i>` on a screen, in order. */
function numberedLines(screen: string): number[] {
  return [...screen.matchAll(/^N(\d+)\s*$/gm)].map((match) => Number(match[1]));
}

/** Polls `probe` until it returns true (generous deadline; loaded machines are slow). */
async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A tmux session running `sbx <args>`; the pane stays after sbx exits and shows its exit code. */
async function startInTmux(name: string, args: readonly string[]): Promise<void> {
  const command = `env SBX_HOME='${cli.home}' '${process.execPath}' '${SBX_BIN}' ${args.join(' ')}; echo "[sbx exited $?]"; sleep 600`;
  await tmux.cmd('new-session', '-d', '-s', name, '-x', '120', '-y', '40', command);
}

beforeAll(async () => {
  real = await startRealBroker();
  cli = sbxRunner();
  for (const args of [
    ['login', '--broker', real.harness.url],
    ['ensure', 'thr_tty'],
  ]) {
    const result = await cli.sbx(args, { input: real.apiKey });
    if (result.code !== 0) throw new Error(`sbx ${args[0] ?? ''} failed: ${result.stderr}`);
  }
}, SLOW);

afterAll(async () => {
  await tmux.killServer();
  await relay?.close();
  await cli.sbx(['release', 'thr_tty']);
  await cli.sbx(['release', 'thr_drop']);
  await real.close();
  cli.close();
}, SLOW);

describe('sbx shell in a terminal (tmux)', () => {
  let shellId = '';

  it(
    'runs typed commands, follows the window size and detaches with Ctrl-]',
    async () => {
      await startInTmux('first', ['shell', 'thr_tty']);
      await tmux.cmd('send-keys', '-t', 'first', 'echo "answer-$((6*7))"', 'Enter');
      await tmux.waitFor('first', /^answer-42\s*$/m);

      await tmux.cmd('send-keys', '-t', 'first', 'stty size', 'Enter');
      await tmux.waitFor('first', /^40 120\s*$/m);
      await tmux.cmd('resize-window', '-t', 'first', '-x', '100', '-y', '30');
      await tmux.cmd('send-keys', '-t', 'first', 'clear; stty size', 'Enter');
      await tmux.waitFor('first', /^30 100\s*$/m);

      await tmux.cmd('send-keys', '-t', 'first', 'C-]');
      const detached = await tmux.waitFor(
        'first',
        /detached from shell (\S+); reattach: sbx shell thr_tty --id \1\]/,
      );
      shellId = detached[1] ?? '';
      expect(shellId).toMatch(/\S/);
      await tmux.waitFor('first', /\[sbx exited 0\]/);
    },
    SLOW,
  );

  it(
    'reattaches by id with the earlier output, and the shell exit code becomes sbx’s',
    async () => {
      expect(shellId).not.toBe('');
      await startInTmux('second', ['shell', 'thr_tty', '--id', shellId]);
      // The scrollback replay brings back what the shell printed before the detach.
      await tmux.waitFor('second', /^30 100\s*$/m);
      await tmux.cmd('send-keys', '-t', 'second', 'echo "back-$((40+2))"', 'Enter');
      await tmux.waitFor('second', /^back-42\s*$/m);
      await tmux.cmd('send-keys', '-t', 'second', 'exit 7', 'Enter');
      await tmux.waitFor('second', /\[sbx exited 7\]/);
    },
    SLOW,
  );

  it(
    '--observe watches a shell without typing into it',
    async () => {
      await startInTmux('owner', ['shell', 'thr_tty']);
      await tmux.cmd('send-keys', '-t', 'owner', 'echo "owner-$((1+1))"', 'Enter');
      await tmux.waitFor('owner', /^owner-2\s*$/m);
      await tmux.cmd('send-keys', '-t', 'owner', 'C-]');
      const id = (await tmux.waitFor('owner', /detached from shell (\S+);/))[1] ?? '';
      await startInTmux('watcher', ['shell', 'thr_tty', '--observe', '--id', id]);
      await tmux.waitFor('watcher', /^owner-2\s*$/m);
      // The watcher's token is the human binding's, narrowed to shell:ro: the agent refuses its keys too.
      const bindings = new CliStore(cli.home).readThreads()['thr_tty']?.bindings;
      const claims = JSON.parse(
        Buffer.from(bindings?.observer?.token.split('.')[1] ?? '', 'base64url').toString('utf8'),
      ) as { scope?: string };
      expect(claims.scope).toBe('shell:ro');
      expect(bindings?.observer?.session_id).toBe(bindings?.human?.session_id);
      await tmux.cmd('send-keys', '-t', 'watcher', 'echo "typed-$((2+3))"', 'Enter');
      await tmux.cmd('send-keys', '-t', 'watcher', 'C-]');
      await tmux.waitFor('watcher', /\[sbx exited 0\]/);
      // Had the watcher's keys reached the shell, its output would be in the scrollback
      // before this marker, which the owner types afterwards.
      await startInTmux('check', ['shell', 'thr_tty', '--id', id]);
      await tmux.cmd('send-keys', '-t', 'check', 'echo "marker-$((3+3))"', 'Enter');
      await tmux.waitFor('check', /^marker-6\s*$/m);
      expect(await tmux.capture('check')).not.toMatch(/typed/);
    },
    SLOW,
  );

  it(
    'resumes in the same pane after the connection drops: nothing lost or repeated, state kept',
    async () => {
      // This thread's shells go through the relay: its cached endpoint is pointed there.
      const ensured = await cli.sbx(['ensure', 'thr_drop']);
      expect(ensured.code).toBe(0);
      const store = new CliStore(cli.home);
      const agentWs = new URL(store.readThreads()['thr_drop']?.ws_base_url ?? 'ws://missing');
      relay = await OutageRelay.start(agentWs);
      const viaRelay = new URL(agentWs);
      viaRelay.host = `127.0.0.1:${relay.port}`;
      store.updateThread('thr_drop', (entry) =>
        entry === undefined ? undefined : { ...entry, ws_base_url: viaRelay.toString() },
      );
      await startInTmux('drop', ['shell', 'thr_drop']);
      await tmux.cmd(
        'send-keys',
        '-t',
        'drop',
        'mkdir -p deep/er && cd deep/er && KEPT=kept-$((40+2))',
        'Enter',
      );
      const loop = 'for i in $(seq 1 100); do echo "N$i"; echo "$i" > progress; sleep 0.05; done';
      await tmux.cmd('send-keys', '-t', 'drop', `${loop}; echo "loop-$((5*5))"`, 'Enter');
      await tmux.waitFor('drop', /^N5\s*$/m);

      relay.cut();
      // Three refused reconnects: more than the CLI's quick retries would survive.
      await until(() => Promise.resolve(relay !== undefined && relay.refused >= 3), 'refused reconnects');
      relay.hold();
      // The loop goes on while the pane is cut off; read its progress over HTTP, not the relay.
      const frozen = Math.max(...numberedLines(await tmux.capture('drop')));
      await until(async () => {
        const progress = await cli.sbx(['cat', 'thr_drop:deep/er/progress']);
        return Number(progress.stdout.trim()) >= Math.min(100, frozen + 20);
      }, 'output printed while disconnected');
      expect(Math.max(...numberedLines(await tmux.capture('drop')))).toBe(frozen);
      relay.restore();

      await tmux.waitFor('drop', /^loop-25\s*$/m, 60_000);
      expect(numberedLines(await tmux.capture('drop'))).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(relay.connections).toBeGreaterThanOrEqual(2);
      // Typing reaches the same shell: its variables and working directory survived.
      await tmux.cmd('send-keys', '-t', 'drop', 'echo "$KEPT in ${PWD##*/}"', 'Enter');
      await tmux.waitFor('drop', /^kept-42 in er\s*$/m);
      await tmux.cmd('resize-window', '-t', 'drop', '-x', '90', '-y', '25');
      await tmux.cmd('send-keys', '-t', 'drop', 'clear; stty size', 'Enter');
      await tmux.waitFor('drop', /^25 90\s*$/m);
      await tmux.cmd('send-keys', '-t', 'drop', 'exit 4', 'Enter');
      await tmux.waitFor('drop', /\[sbx exited 4\]/);
    },
    SLOW,
  );
});
