// The keep-alive: a connection that dies without a close (a partition, a forgotten NAT
// entry) is noticed, so a shell reattaches and a streamed program fails with a clear
// error instead of waiting forever. A fake agent plays the dead peer: it stops answering.
import { afterEach, describe, expect, it } from '@jest/globals';
import { BackendUnavailableError, type SbxClientError } from '../src/index.js';
import { fakeAgentClient, startFakeAgent, type FakeAgent, type FakeConnection } from './fake-agent.js';
import { eventually, rejectionOf } from './wait-for.js';

const RETRY = { maxAttempts: 5, baseDelayMs: 20, maxDelayMs: 80 };
const KEEP_ALIVE = { idleMs: 100, timeoutMs: 200 };
const fakes: FakeAgent[] = [];

afterEach(async () => {
  for (const fake of fakes.splice(0)) await fake.close();
});

async function fakeAgent(script: Parameters<typeof startFakeAgent>[0]): Promise<FakeAgent> {
  const fake = await startFakeAgent(script);
  fakes.push(fake);
  return fake;
}

/** Answers an exec `start` with `ready` and one chunk of output. */
function startedProgram(conn: FakeConnection): void {
  conn.send({ type: 'ready', process_id: 'proc_fake' });
  conn.send({ type: 'stdout', data: 'partial ' });
}

/** Everything iterating `stdout` yielded, and what it ended with. */
async function drain(stdout: AsyncIterable<Buffer>): Promise<{ text: string; end: unknown }> {
  let text = '';
  try {
    for await (const chunk of stdout) text += chunk.toString('utf8');
    return { text, end: 'ended as complete' };
  } catch (err) {
    return { text, end: err };
  }
}

describe('keep-alive (fake agent)', () => {
  it('a shell whose connection goes silent is ended after idle + timeout and reattached by id', async () => {
    const starts: Record<string, unknown>[] = [];
    const fake = await fakeAgent({
      silent: (index) => index === 0,
      onStart: (conn, start) => {
        starts.push(start);
        conn.send({ type: 'ready', shell_session_id: 'sh_fake', output_offset: 0 });
      },
    });
    const shell = await fakeAgentClient(fake, RETRY, KEEP_ALIVE).openShell();
    const openedAt = Date.now();
    await eventually(() => shell.reconnects === 1, 'the reattach');
    const first = fake.connections[0];
    expect(first?.closed).toBe(true);
    expect(first?.pings).toBe(1);
    expect(starts[1]).toMatchObject({ shell_session_id: 'sh_fake' });
    // Not before the silence had lasted idle + timeout (a timer may fire a millisecond early).
    expect((fake.connections[1]?.at ?? 0) - openedAt).toBeGreaterThanOrEqual(
      KEEP_ALIVE.idleMs + KEEP_ALIVE.timeoutMs - 2,
    );
    shell.detach();
  });

  it('a connection that answers its pings stays up however quiet the shell is', async () => {
    const fake = await fakeAgent({
      onStart: (conn) => conn.send({ type: 'ready', shell_session_id: 'sh_fake', output_offset: 0 }),
    });
    const shell = await fakeAgentClient(fake, RETRY, KEEP_ALIVE).openShell();
    await eventually(() => (fake.connections[0]?.pings ?? 0) >= 4, 'four pings');
    expect(fake.connections).toHaveLength(1);
    expect(shell.reconnects).toBe(0);
    shell.detach();
  });

  it('a streamed program whose connection goes silent fails wait() and its output, never as complete', async () => {
    const fake = await fakeAgent({ silent: () => true, onStart: startedProgram });
    const stream = await fakeAgentClient(fake, RETRY, KEEP_ALIVE).exec.stream({ cmd: 'long' });
    const { text, end } = await drain(stream.stdout);
    expect(text).toBe('partial ');
    expect(end).toBeInstanceOf(BackendUnavailableError);
    expect((end as Error).message).toMatch(
      /^exec proc_fake: the connection was lost before the program's exit arrived \(the connection went silent.*\); the output read is incomplete/,
    );
    expect((end as SbxClientError).closeCode).toBe(1006);
    expect(await rejectionOf(stream.wait(), 'wait()')).toBe(end);
  });

  it('a streamed program whose connection drops says the output read is incomplete', async () => {
    const fake = await fakeAgent({
      onStart: (conn) => {
        startedProgram(conn);
        conn.socket.terminate();
      },
    });
    const stream = await fakeAgentClient(fake, RETRY, KEEP_ALIVE).exec.stream({ cmd: 'long' });
    const failure = await rejectionOf(stream.wait(), 'wait()');
    expect(failure).toBeInstanceOf(BackendUnavailableError);
    expect(failure.message).toMatch(
      /^exec proc_fake: the connection was lost before the program's exit arrived \(the connection dropped \(1006\)\); the output read is incomplete/,
    );
  });

  it('paused output is not silence: no ping, no end, until the reader resumes', async () => {
    const fake = await fakeAgent({ silent: () => true, onStart: startedProgram });
    const stream = await fakeAgentClient(fake, RETRY, KEEP_ALIVE).exec.stream(
      { cmd: 'long' },
      { onStdout: () => undefined },
    );
    stream.pauseOutput();
    // A bounded wait for something that must not happen: five times idle + timeout.
    await new Promise((resolve) => setTimeout(resolve, 5 * (KEEP_ALIVE.idleMs + KEEP_ALIVE.timeoutMs)));
    const conn = fake.connections[0];
    expect(conn?.closed).toBe(false);
    expect(conn?.pings).toBe(0);
    conn?.send({ type: 'exit', code: 0 });
    conn?.socket.close(1000);
    stream.resumeOutput();
    expect(await stream.wait()).toEqual({ code: 0, signal: undefined, timedOut: false });
  });
});
