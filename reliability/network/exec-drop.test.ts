// Issue 28, faults, bullet 5 (exec and downloads): the connection between the SDK and the
// agent is reset or partitioned mid-output. The exec socket has no resume (the agent ends a
// program whose socket closes: docs/protocol.md, Exec socket), so the client must get a clear
// error, never a truncated output presented as complete; the program must be ended, not
// left running; a call that may have run is not sent again; a download is never shorter.
//
// Bounded: one of each. Long (SBX_RELIABILITY=long): twenty resets at random points.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BackendUnavailableError, TransportError, type ExecStream } from '../../packages/client/src/index.js';
import { rejectionOf } from '../../packages/client/test/wait-for.js';
import { fileAppears, LONG, startProxiedSandbox, type ProxiedSandbox } from './network-kit.js';

let net: ProxiedSandbox;
let round = 0;

beforeAll(async () => {
  net = await startProxiedSandbox('thr_net_exec', 'netex');
}, 120_000);

afterAll(async () => {
  await net?.close();
}, 60_000);

/**
 * Prints o1 … o2000000 (15 MB, seconds of work: more than every buffer on the way holds, so
 * a partition stalls it), then marks that it finished.
 */
function longProgram(k: number): string {
  return `echo $$ > /tmp/pid-${k}; i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); echo o$i; done; : > /tmp/finished-${k}`;
}

/** What iterating stdout yielded and how it ended (the error, or a note that it ended whole). */
async function drained(stream: ExecStream): Promise<{ text: string; end: unknown }> {
  let text = '';
  try {
    for await (const chunk of stream.stdout) text += chunk.toString('utf8');
    return { text, end: 'ended as if complete' };
  } catch (err) {
    return { text, end: err };
  }
}

/** The output read so far is a clean prefix of o1, o2, …: nothing reordered or repeated. */
function expectPrefix(text: string): void {
  const lines = text.split('\n');
  lines.pop(); // possibly cut mid-line
  expect(lines).toEqual(lines.map((_, i) => `o${i + 1}`));
}

/** The agent ended the program of round `k` and it never finished (asked straight, not by the proxy). */
async function expectEnded(k: number): Promise<void> {
  await fileAppears(net.direct.agent, `/tmp/pid-${k}`);
  const deadline = Date.now() + 60_000;
  const probe = `kill -0 $(cat /tmp/pid-${k}) 2>/dev/null && echo running || echo gone`;
  while ((await net.direct.agent.exec.run({ cmd: probe })).stdout !== 'gone\n') {
    if (Date.now() > deadline) throw new Error(`the program of round ${k} still runs`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const finished = await net.direct.agent.exec.run({
    cmd: `test -e /tmp/finished-${k} && echo yes || echo no`,
  });
  expect(finished.stdout).toBe('no\n');
}

/** Runs the long program through the proxy and applies `fault` once `bytes` of it went by. */
async function faultMidOutput(
  fault: (bytes: number) => Promise<void>,
  bytes: number,
): Promise<{ k: number; text: string; end: unknown; wait: Error }> {
  const k = ++round;
  const stream = await net.through.agent.exec.stream({ cmd: longProgram(k) });
  const faulted = fault(bytes);
  const { text, end } = await drained(stream);
  await faulted;
  return { k, text, end, wait: await rejectionOf(stream.wait(), 'wait()') };
}

describe('exec across a broken network (real agent, TCP proxy)', () => {
  it('a stream reset mid-output: a clear error from stdout and wait(), a clean prefix, the program ended', async () => {
    const rounds = LONG ? 20 : 1;
    for (let r = 0; r < rounds; r++) {
      const { k, text, end, wait } = await faultMidOutput(
        (bytes) => net.proxy.cutAfter(bytes),
        1 + Math.floor(Math.random() * 200_000),
      );
      expect(end).toBeInstanceOf(BackendUnavailableError);
      expect((end as Error).message).toMatch(
        /the connection was lost before the program's exit arrived.*the output read is incomplete/,
      );
      expect(wait).toBe(end);
      expectPrefix(text);
      await expectEnded(k);
    }
  }, 600_000);

  it('a stream in a partition: the keep-alive fails it clearly; once healed, the agent ends the program', async () => {
    const { k, text, end } = await faultMidOutput((bytes) => net.proxy.blackholeAfter(bytes), 50_000);
    expect(end).toBeInstanceOf(BackendUnavailableError);
    expect((end as Error).message).toMatch(/went silent.*the output read is incomplete/);
    expectPrefix(text);
    net.proxy.up();
    await expectEnded(k);
  }, 120_000);

  it('exec.run cut before its answer: a TransportError saying it may have run, never sent twice', async () => {
    const k = ++round;
    const cmd = `echo run >> /tmp/runs-${k}; until [ -e /tmp/run-go-${k} ]; do sleep 0.02; done; echo done`;
    const running = net.through.agent.exec.run({ cmd });
    await fileAppears(net.direct.agent, `/tmp/runs-${k}`);
    net.proxy.cut();
    const failure = await rejectionOf(running, 'exec.run');
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.message).toMatch(/may have reached the server and run, so it was not retried/);
    await net.direct.agent.files.write(`/tmp/run-go-${k}`, '');
    expect(await net.direct.agent.files.readText(`/tmp/runs-${k}`)).toBe('run\n');
  }, 60_000);

  it('a followed background process cut mid-output: iteration throws, it never ends as complete', async () => {
    const k = ++round;
    const started = await net.direct.agent.exec.start({ cmd: longProgram(k) });
    const follow = net.through.agent.exec.output(started.process_id, { follow: true });
    const cut = net.proxy.cutAfter(20_000);
    const chunks: Buffer[] = [];
    const iterate = async (): Promise<void> => {
      for await (const chunk of follow) chunks.push(chunk.data);
    };
    const failure = await rejectionOf(iterate(), 'following the output');
    await cut;
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.message).toMatch(/cut off before the process exited/);
    await expect(follow.exit).rejects.toBe(failure);
    expectPrefix(Buffer.concat(chunks).toString('utf8'));
    await net.direct.agent.exec.signal(started.process_id, 'SIGKILL');
  }, 60_000);

  it('a download cut mid-body: a TransportError, never a shorter file (read and readStream)', async () => {
    const size = 4 * 1024 * 1024;
    await net.direct.human.files.write('big.bin', new Uint8Array(size).fill(7));
    const cut = net.proxy.cutAfter(size / 4);
    const failure = await rejectionOf(net.through.human.files.read('big.bin'), 'files.read');
    await cut;
    expect(failure).toBeInstanceOf(TransportError);
    expect(failure.message).toMatch(/^read big\.bin: the connection was lost while the answer was read/);
    const stream = await net.through.human.files.readStream('big.bin');
    const streamCut = net.proxy.cutAfter(size / 4);
    let received = 0;
    const iterate = async (): Promise<void> => {
      for await (const chunk of stream) received += chunk.length;
    };
    const streamFailure = await rejectionOf(iterate(), 'reading the stream');
    await streamCut;
    expect(streamFailure).toBeInstanceOf(TransportError);
    expect(received).toBeLessThan(size);
    // Whole once the network is whole.
    expect((await net.through.human.files.read('big.bin')).length).toBe(size);
  }, 60_000);
});
