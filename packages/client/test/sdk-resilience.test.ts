import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import {
  BackendUnavailableError,
  BadRequestError,
  BrokerClient,
  BrokerSession,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  SandboxClient,
  SbxClientError,
  TransportError,
  type FileWatch,
  type Shell,
} from '../src/index.js';
import { fakeAgentClient, fixedTokens, startFakeAgent, type FakeAgent } from './fake-agent.js';
import { startSharedSandbox, type SharedSandbox } from './shared-sandbox.js';
import type { RealBroker } from './support.js';
import { eventually, rejectionOf } from './wait-for.js';

const RETRY = { maxAttempts: 5, baseDelayMs: 40, maxDelayMs: 160 };
const fakes: FakeAgent[] = [];

afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

/** Everything the shell prints from now on. */
function textOf(shell: Shell): () => string {
  let text = '';
  shell.onData((data) => (text += data.toString('utf8')));
  return () => text;
}

/** What iterating the watch threw (handled at once: the watch may fail before it is awaited). */
function iterationError(watch: FileWatch): Promise<unknown> {
  const iterate = async (): Promise<void> => {
    for await (const event of watch) void event;
  };
  return iterate().then(
    () => 'iteration ended without an error',
    (err: unknown) => err,
  );
}

/** A fake agent that answers every `start` with `ready` and then drops the socket with `code`. */
async function flappingAgent(code: number): Promise<FakeAgent> {
  const fake = await startFakeAgent({
    onStart: (conn) => {
      conn.send({ type: 'ready', shell_session_id: 'sh_fake', output_offset: 0 });
      conn.socket.close(code, 'scripted drop');
    },
  });
  fakes.push(fake);
  return fake;
}

/** Each reconnect waited at least half its backoff cap, the first one included. */
function expectBackoffBetween(fake: FakeAgent): void {
  const at = fake.connections.map((c) => c.at);
  for (let n = 1; n < at.length; n++) {
    const halfCap = Math.min(RETRY.maxDelayMs, RETRY.baseDelayMs * 2 ** (n - 1)) / 2;
    // 2 ms of slack: a timer may fire a millisecond early by the wall clock.
    expect((at[n] ?? 0) - (at[n - 1] ?? 0)).toBeGreaterThanOrEqual(halfCap - 2);
  }
}

describe('reconnect limits (fake agent that accepts, answers ready, then drops)', () => {
  it.each([1011, 1013])(
    'a shell whose agent drops every socket with %d gives up after maxAttempts, with backoff',
    async (code) => {
      const fake = await flappingAgent(code);
      const shell = await fakeAgentClient(fake, RETRY).openShell();
      const failure = await rejectionOf(shell.exited, 'shell.exited');
      expect(failure).toBeInstanceOf(BackendUnavailableError);
      expect(failure.message).toMatch(/sh_fake: gave up after 5 reconnect attempts/);
      expect((failure as SbxClientError).closeCode).toBe(code);
      // The first connection, then exactly maxAttempts reconnects: not hundreds.
      expect(fake.connections).toHaveLength(1 + RETRY.maxAttempts);
      expectBackoffBetween(fake);
    },
    40_000,
  );

  it('a watch whose agent drops every socket gives up after maxAttempts, and iteration throws', async () => {
    const fake = await flappingAgent(1011);
    const watch = await fakeAgentClient(fake, RETRY).files.watch('w');
    const iterated = iterationError(watch);
    const failure = await rejectionOf(watch.ended, 'watch.ended');
    expect(failure).toBeInstanceOf(BackendUnavailableError);
    expect(failure.message).toMatch(/watch w: gave up after 5 reconnect attempts/);
    expect(await iterated).toBe(failure);
    expect(fake.connections).toHaveLength(1 + RETRY.maxAttempts);
    expectBackoffBetween(fake);
  }, 120_000);
});

describe('detach during a reconnect (fake agent)', () => {
  it('stops a reconnect whose socket is still authenticating and closes that socket', async () => {
    let releaseAuth: () => void = () => undefined;
    const authHeld = new Promise<void>((resolve) => (releaseAuth = resolve));
    const fake = await startFakeAgent({
      beforeAuth: (_conn, index) => (index === 0 ? Promise.resolve() : authHeld),
      onStart: (conn) => conn.send({ type: 'ready', shell_session_id: 'sh_fake', output_offset: 0 }),
    });
    fakes.push(fake);
    const shell = await fakeAgentClient(fake, RETRY).openShell();
    fake.connections[0]?.socket.close(1011, 'scripted drop');
    await eventually(() => fake.connections.length === 2, 'the reconnect to connect');
    shell.detach();
    releaseAuth();
    await eventually(() => fake.connections[1]?.closed === true, 'the reconnecting socket to close', 10_000);
    expect(shell.socket).toBeUndefined();
    // Well past the longest backoff: no further attempt.
    await new Promise((resolve) => setTimeout(resolve, 4 * RETRY.maxDelayMs));
    expect(fake.connections).toHaveLength(2);
  }, 120_000);

  it('stops a reconnect that is waiting out its backoff', async () => {
    const slow = { maxAttempts: 5, baseDelayMs: 600, maxDelayMs: 600 };
    const fake = await startFakeAgent({
      onStart: (conn) => conn.send({ type: 'ready', shell_session_id: 'sh_fake', output_offset: 0 }),
    });
    fakes.push(fake);
    const shell = await fakeAgentClient(fake, slow).openShell();
    const dropped = new Promise((resolve) => shell.socket?.once('close', resolve));
    fake.connections[0]?.socket.close(1011, 'scripted drop');
    await dropped;
    shell.detach();
    await new Promise((resolve) => setTimeout(resolve, 2 * slow.maxDelayMs));
    expect(fake.connections).toHaveLength(1);
  }, 120_000);
});

describe('against a real agent', () => {
  let shared: SharedSandbox;
  let real: RealBroker;
  let broker: BrokerClient;
  let humanSession: BrokerSession;
  let human: SandboxClient;
  let agent: SandboxClient;

  beforeAll(async () => {
    shared = await startSharedSandbox('thr_resilience', 'res');
    ({ real, broker, humanSession, human, agent } = shared);
  }, 120_000);

  afterAll(async () => {
    await shared?.close();
  }, 60_000);

  it('a watch that fails on the agent (too many directories) ends with its error, not normally', async () => {
    await agent.files.mkdir('many', { parents: true });
    const watch = await human.files.watch('many', { recursive: true });
    const iterated = iterationError(watch);
    // More directories than the agent watches under one path (4096): it sends an error, then closes 1000.
    await agent.exec.run({ cmd: 'cd many && seq 1 4200 | xargs mkdir' }, { timeoutMs: 60_000 });
    const failure = await rejectionOf(watch.ended, 'watch.ended', 60_000);
    expect(failure).toBeInstanceOf(BadRequestError);
    expect(failure.message).toMatch(/directories to watch/);
    expect(await iterated).toBe(failure);
  }, 90_000);

  it('a refused shell start rejects open with the agent’s reason', async () => {
    // A shell's cwd is a sandbox path, relative to the workspace, as the files API's paths.
    await expect(human.openShell({ cwd: 'no/such/dir' })).rejects.toBeInstanceOf(NotFoundError);
    await agent.files.write('plain.txt', 'not a directory');
    await expect(human.openShell({ cwd: 'plain.txt' })).rejects.toBeInstanceOf(BadRequestError);
    // Absolute, it may be anywhere in the sandbox but /proc, which the agent does not serve.
    await expect(human.openShell({ cwd: '/proc' })).rejects.toBeInstanceOf(ForbiddenError);
  }, 120_000);

  it('the replay right behind `ready` reaches a listener added as soon as attach resolves', async () => {
    const shell = await human.openShell();
    const first = textOf(shell);
    shell.write('echo "replay-$((40+2))"\n');
    await eventually(() => /^replay-42\r?$/m.test(first()), 'the marker');
    shell.detach();
    // Several times: `ready` and the replay often arrive in one read.
    for (let n = 0; n < 5; n++) {
      const again = await human.attachShell(shell.id);
      const seen = textOf(again);
      await eventually(() => /^replay-42\r?$/m.test(seen()), `the replayed marker (attach ${n + 1})`);
      expect(again.id).toBe(shell.id);
      again.detach();
    }
    const last = await human.attachShell(shell.id);
    last.close();
    await last.exited;
  }, 60_000);

  it('the shell limit rejects open with a RateLimitedError instead of reattaching to ""', async () => {
    // Its own sandbox, so the other tests' shells do not count.
    const scope = { type: 'thread', id: 'thr_shell_limit' } as const;
    const own = await BrokerSession.ensure(broker, { scope, actor: { type: 'human', id: 'usr_limit' } });
    const client = own.sandbox();
    const shells: Shell[] = [];
    try {
      // The agent runs at most 16 shells by default.
      for (let n = 0; n < 16; n++) shells.push(await client.openShell());
      const refused = await rejectionOf(client.openShell(), 'the 17th openShell');
      expect(refused).toBeInstanceOf(RateLimitedError);
      expect(refused.message).toMatch(/at most 16 shells/);
    } finally {
      for (const shell of shells) shell.close();
      await Promise.allSettled(shells.map((shell) => shell.exited));
      await own.release().catch(() => undefined);
    }
  }, 120_000);

  it('exited rejects, typed, when the agent closes the connection (1000) without an exit status', async () => {
    const shell = await human.openShell();
    const observer = new SandboxClient({
      httpBaseUrl: humanSession.response.dataplane.http_base_url,
      wsBaseUrl: humanSession.response.dataplane.ws_base_url,
      tokens: fixedTokens(
        real.mintShortToken(humanSession.response.sandbox.id, humanSession.sessionId, ['shell:ro'], 600),
      ),
    });
    const watching = await observer.attachShell(shell.id);
    // An observer's `close` ends only its own connection: the agent closes it 1000, no exit frame.
    watching.close();
    const failure = await rejectionOf(watching.exited, 'the observer’s exited');
    expect(failure).toBeInstanceOf(BackendUnavailableError);
    expect((failure as SbxClientError).closeCode).toBe(1000);
    expect(failure.message).toMatch(/may still run/);
    shell.close();
    await shell.exited;
  }, 60_000);

  it('stdin text whose JSON escaping would exceed the frame limit arrives intact (write)', async () => {
    const quotes = '"'.repeat(700_000);
    const received: Buffer[] = [];
    const stream = await agent.exec.stream({ argv: ['cat'] }, { onStdout: (data) => received.push(data) });
    stream.write(quotes);
    stream.closeStdin();
    expect((await stream.wait()).code).toBe(0);
    expect(Buffer.concat(received).toString('utf8')).toBe(quotes);
  }, 60_000);

  it('a large initial stdin (the start option) arrives intact', async () => {
    const quotes = '"'.repeat(700_000);
    const received: Buffer[] = [];
    const stream = await agent.exec.stream(
      { argv: ['cat'] },
      { stdin: quotes, onStdout: (data) => received.push(data) },
    );
    stream.write('end');
    stream.closeStdin();
    expect((await stream.wait()).code).toBe(0);
    expect(Buffer.concat(received).toString('utf8')).toBe(`${quotes}end`);
  }, 60_000);

  it('a follower too slow for the agent gets a TransportError that says what to do', async () => {
    // The 60 MB come only once the follower is attached: a process that wrote them all before
    // the follow reached the agent would leave it its 1 MiB backlog, and no overflow (loaded host).
    const started = await agent.exec.start({
      cmd: 'echo following; read -r go; yes | head -c 60000000',
    });
    const follow = agent.exec.output(started.process_id, { follow: true });
    const chunks = follow[Symbol.asyncIterator]();
    // Its first line: the agent has sent the backlog and follows the process from here on.
    const first = await chunks.next();
    expect(first.done).toBe(false);
    expect(first.value).toMatchObject({ stream: 'stdout', data: Buffer.from('following\n') });
    await agent.exec.stdin(started.process_id, 'go\n');
    // Not reading while the process writes 60 MB: the agent's follow buffer (4 MiB) overflows.
    await exitedProcess(started.process_id);
    const failure = await rejectionOf(drainIterator(chunks), 'the rest of the output', 120_000);
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.message).toMatch(/may repeat output already read or miss some/);
    await expect(follow.exit).rejects.toBe(failure);
    await agent.exec.remove(started.process_id);
  }, 300_000);

  /** Polls the process until it has exited (generous ceiling). */
  async function exitedProcess(processId: string): Promise<void> {
    const deadline = Date.now() + 180_000;
    while ((await agent.exec.get(processId)).status !== 'exited') {
      if (Date.now() > deadline) throw new Error(`process ${processId} is still running`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
});

async function drainIterator(iterator: AsyncIterator<unknown>): Promise<void> {
  for (let next = await iterator.next(); next.done !== true; next = await iterator.next());
}
