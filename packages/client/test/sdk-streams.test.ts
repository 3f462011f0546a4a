import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  BrokerClient,
  BrokerSession,
  CapabilityDeniedError,
  NotFoundError,
  RefreshingCredentials,
  SandboxClient,
  SecurityError,
  type FileWatch,
  type TokenSource,
  type WatchEvent,
} from '../src/index.js';
import { startSharedSandbox, type SharedSandbox } from './shared-sandbox.js';
import type { RealBroker } from './support.js';

/** The broker's default policy: agents get files and processes, humans files and shells. */
const AGENT_CAPABILITIES = ['fs:rw', 'process'];
const FAST_RETRY = { maxAttempts: 5, baseDelayMs: 5, maxDelayMs: 20 };
let shared: SharedSandbox;
let real: RealBroker;
let broker: BrokerClient;
let agentSession: BrokerSession;
let humanSession: BrokerSession;
/** The agent's client (files and processes); it also makes the changes a watch must see. */
let agent: SandboxClient;
/** The human's client on the same sandbox: it watches, and it may not run processes. */
let human: SandboxClient;

beforeAll(async () => {
  shared = await startSharedSandbox('thr_streams', 'streams');
  ({ real, broker, agentSession, humanSession, agent, human } = shared);
}, 120_000);

afterAll(async () => {
  await shared?.close();
}, 60_000);

/** Resolves when `check` holds, polling (generous deadline, no fixed sleeps). */
async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Reads a watch in the background; `until` waits for a matching event. */
function collect(watch: FileWatch) {
  const seen: WatchEvent[] = [];
  const loop = (async () => {
    for await (const event of watch) seen.push(event);
  })();
  const until = (expected: Partial<WatchEvent>): Promise<void> =>
    eventually(
      () => seen.some((e) => Object.entries(expected).every(([k, v]) => Reflect.get(e, k) === v)),
      `${JSON.stringify(expected)} in ${JSON.stringify(seen)}`,
    );
  return { seen, loop, until };
}

/** Reads an async iterable of bytes in the background. */
function drain(chunks: AsyncIterable<Buffer>) {
  const parts: Buffer[] = [];
  const done = (async () => {
    for await (const chunk of chunks) parts.push(chunk);
  })();
  return { bytes: () => Buffer.concat(parts), text: () => Buffer.concat(parts).toString('utf8'), done };
}

function cutSocket(socket: unknown): void {
  const tcp: unknown = socket === undefined ? undefined : Reflect.get(socket as object, '_socket');
  expect(tcp).toBeInstanceOf(Socket);
  if (tcp instanceof Socket) tcp.destroy();
}

/** The absolute sandbox path of `rel`, as answers and watch events name it (`/workspace/rel`). */
const inWorkspace = (rel: string): string => `${agentSession.workspacePath}/${rel}`;

describe('files.watch', () => {
  it('sees create, write, rename and remove by another client, and survives a killed socket', async () => {
    await agent.files.mkdir('watched/sub', { parents: true });
    // Asked for relatively, reported absolutely: events name sandbox paths.
    const watch = await human.files.watch('watched', { recursive: true });
    const events = collect(watch);
    await agent.files.write('watched/sub/a.txt', 'one');
    await events.until({ event: 'create', path: inWorkspace('watched/sub/a.txt'), kind: 'file' });
    await agent.files.write(inWorkspace('watched/sub/a.txt'), 'two');
    await events.until({ event: 'write', path: inWorkspace('watched/sub/a.txt') });
    await agent.files.move('watched/sub/a.txt', 'watched/b.txt');
    await events.until({
      event: 'rename',
      path: inWorkspace('watched/b.txt'),
      old_path: inWorkspace('watched/sub/a.txt'),
    });
    await agent.files.remove('watched/b.txt');
    await events.until({ event: 'remove', path: inWorkspace('watched/b.txt'), kind: 'file' });

    cutSocket(watch.socket);
    await eventually(() => watch.reconnects >= 1, 'the watch to reconnect');
    await agent.files.write('watched/sub/after.txt', 'still watching');
    await events.until({ event: 'create', path: inWorkspace('watched/sub/after.txt') });

    expect(watch.reconnects).toBeGreaterThanOrEqual(1);
    watch.close();
    await events.loop;
    await watch.ended;
    expect(new Set(events.seen.map((e) => e.event))).toEqual(
      new Set(['create', 'write', 'rename', 'remove']),
    );
    expect(events.seen.every((e) => e.path.startsWith(inWorkspace('watched/')))).toBe(true);
  }, 90_000);

  it('delivers to a callback, outlives its token, and ends with the abort reason', async () => {
    await agent.files.mkdir('short', { parents: true });
    const short = real.mintShortToken(
      agentSession.response.sandbox.id,
      agentSession.sessionId,
      AGENT_CAPABILITIES,
      3,
    );
    const credentials = new RefreshingCredentials({
      initial: short,
      refresh: async () => {
        const next = await broker.refresh(agentSession.sessionId);
        return { token: next.access_token, expiresAt: new Date(next.expires_at) };
      },
    });
    const client = new SandboxClient({
      httpBaseUrl: agentSession.response.dataplane.http_base_url,
      wsBaseUrl: agentSession.response.dataplane.ws_base_url,
      tokens: credentials,
    });
    const seen: WatchEvent[] = [];
    const abort = new AbortController();
    const watch = await client.files.watch(inWorkspace('short'), {
      signal: abort.signal,
      onEvent: (e) => seen.push(e),
    });
    expect(() => watch[Symbol.asyncIterator]()).toThrow(TypeError);
    await eventually(() => Date.now() > short.expiresAt.getTime() + 500, 'the first token to expire', 10_000);
    await agent.files.write('short/late.txt', 'after expiry');
    await eventually(
      () => seen.some((e) => e.path === inWorkspace('short/late.txt')),
      'the event after expiry',
    );
    expect(credentials.current().token).not.toBe(short.token);
    abort.abort();
    await expect(watch.ended).rejects.toMatchObject({ name: 'AbortError' });
    credentials.close();
  }, 60_000);

  it('a missing path is a NotFoundError', async () => {
    await expect(human.files.watch('no/such/dir')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('exec.stream', () => {
  it('delivers stdout and stderr as they are written, takes stdin, and propagates the exit code', async () => {
    const stream = await agent.exec.stream({
      cmd: 'echo first; echo err1 >&2; read line; echo "got $line"; echo err2 >&2; exit 5',
    });
    const stdout = drain(stream.stdout);
    const stderr = drain(stream.stderr);
    // The program is blocked on `read`: what arrived so far was streamed, not collected at exit.
    await eventually(() => stdout.text() === 'first\n' && stderr.text() === 'err1\n', 'the first lines');
    stream.write('hello\n');
    expect(await stream.wait()).toEqual({ code: 5, signal: undefined, timedOut: false });
    await Promise.all([stdout.done, stderr.done]);
    expect(stdout.text()).toBe('first\ngot hello\n');
    expect(stderr.text()).toBe('err1\nerr2\n');
    expect(stream.processId).toMatch(/^proc_/);
  }, 60_000);

  it('round-trips arbitrary bytes exactly through cat, ended by stdin EOF', async () => {
    const text = Buffer.from('héllo wörld ✓ 😀\n'.repeat(2000), 'utf8');
    const everyByte = Buffer.from(Array.from({ length: 256 }, (_v, i) => i));
    // Over one frame's worth, so stdin is split across frames and output across many chunks.
    const input = Buffer.concat([everyByte, randomBytes(900_000), text, everyByte]);
    const received: Buffer[] = [];
    const stream = await agent.exec.stream({ argv: ['cat'] }, { onStdout: (b) => received.push(b) });
    expect(() => stream.stdout[Symbol.asyncIterator]()).toThrow(TypeError);
    stream.write(input.subarray(0, 500_000));
    stream.write(input.subarray(500_000));
    stream.closeStdin();
    expect((await stream.wait()).code).toBe(0);
    expect(Buffer.concat(received).equals(input)).toBe(true);
  }, 60_000);

  it('kill signals the program; an abort kills it and rejects wait', async () => {
    const sleeper = await agent.exec.stream({ argv: ['sleep', '60'] });
    sleeper.kill('SIGTERM');
    expect(await sleeper.wait()).toMatchObject({ code: 143, signal: 'SIGTERM' });

    // The aborted program records its pid, then waits for a go file to write its marker; no
    // clock is involved, so a loaded machine cannot make an abort that worked look late.
    const abort = new AbortController();
    const aborted = await agent.exec.stream(
      { cmd: 'echo $$ > aborted.pid; while [ ! -e go ]; do sleep 0.05; done; echo alive > aborted.txt' },
      { signal: abort.signal },
    );
    await eventually(
      () =>
        agent.files.stat('aborted.pid').then(
          () => true,
          () => false,
        ),
      'the aborted program to start',
    );
    abort.abort();
    await expect(aborted.wait()).rejects.toMatchObject({ name: 'AbortError' });
    const probe = 'kill -0 "$(cat aborted.pid)" 2>/dev/null && echo running || echo gone';
    await eventually(
      async () => (await agent.exec.run({ cmd: probe })).stdout === 'gone\n',
      'the aborted program to end',
    );
    await agent.files.write('go', '');
    const control = await agent.exec.stream({
      cmd: 'while [ ! -e go ]; do sleep 0.05; done; echo alive > control.txt',
    });
    expect((await control.wait()).code).toBe(0);
    // The programs ran in the workspace (their default cwd): their files are the files API's.
    expect(await agent.files.readText('control.txt')).toBe('alive\n');
    // The go file that let the control write its marker never reached the aborted program.
    await expect(agent.files.stat('aborted.txt')).rejects.toBeInstanceOf(NotFoundError);
  }, 60_000);

  it('a token without `process` is a SecurityError at once, never retried', async () => {
    let connects = 0;
    const tokens: TokenSource = {
      current: () => humanSession.credentials.current(),
      refresh: () => humanSession.credentials.refresh(),
      fresh: () => {
        connects++;
        return humanSession.credentials.fresh();
      },
      onRefresh: (listener) => humanSession.credentials.onRefresh(listener),
    };
    const client = new SandboxClient({
      httpBaseUrl: humanSession.response.dataplane.http_base_url,
      wsBaseUrl: humanSession.response.dataplane.ws_base_url,
      tokens,
      retry: FAST_RETRY,
    });
    const attempt = client.exec.stream({ argv: ['true'] });
    await expect(attempt).rejects.toBeInstanceOf(SecurityError);
    await expect(attempt).rejects.toBeInstanceOf(CapabilityDeniedError);
    expect(connects).toBe(1);
  });
});

describe('exec.output with follow', () => {
  it('streams output printed after the call started and ends when the process exits', async () => {
    const started = await agent.exec.start({
      cmd: 'echo early; read x; echo "late $x"; echo oops >&2; exit 3',
    });
    const follow = agent.exec.output(started.process_id, { follow: true });
    const chunks: { stream: string; text: string }[] = [];
    const text = (stream: string): string =>
      chunks
        .filter((c) => c.stream === stream)
        .map((c) => c.text)
        .join('');
    const loop = (async () => {
      for await (const chunk of follow)
        chunks.push({ stream: chunk.stream, text: chunk.data.toString('utf8') });
    })();
    await eventually(() => text('stdout') === 'early\n', 'the buffered line');
    await agent.exec.stdin(started.process_id, 'go\n');
    await loop;
    expect(text('stdout')).toBe('early\nlate go\n');
    expect(text('stderr')).toBe('oops\n');
    expect(await follow.exit).toEqual({ exit_code: 3, signal: null });
    await agent.exec.remove(started.process_id);
  }, 60_000);
});
