// Issue 28, faults, bullet 5 (shells): the connection between the SDK and the agent is cut
// (reset), refused, or partitioned (a black hole nobody is told about) mid-shell. The SDK
// reattaches by shell id, the agent replays its scrollback from `ready.output_offset`, and
// the SDK skips what it delivered already: every line typed before, during and after the
// fault, and every line the shell printed meanwhile, reaches the client exactly once, in
// order. "During" means once the SDK knows the link is down (it then queues input); a line
// typed into a connection that is already dead but not yet noticed may be lost (the
// protocol does not acknowledge input: packages/client/README.md, Connection resilience).
//
// Bounded: one refused outage, one partition, three resets at random points of a stream.
// Long (SBX_RELIABILITY=long): thirty resets, bigger streams.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Shell } from '../../packages/client/src/index.js';
import {
  fileAppears,
  LONG,
  noticed,
  numbered,
  quietShell,
  seen,
  startProxiedSandbox,
  typeLines,
  type ProxiedSandbox,
} from './network-kit.js';

const HALF = 6_000;
let net: ProxiedSandbox;
let round = 0;

beforeAll(async () => {
  net = await startProxiedSandbox('thr_net_shell', 'netsh');
}, 120_000);

afterAll(async () => {
  await net?.close();
}, 60_000);

/**
 * Prints n000001 … n{2·HALF}; after the first half it waits for `/tmp/go-<k>` (so the second
 * half is printed while the test holds the network down), and marks `/tmp/done-<k>` at the end.
 */
function haltingProducer(k: number): string {
  return (
    `for ((i=1;i<=${2 * HALF};i++)); do printf 'n%06d\\n' $i; ` +
    `if ((i==${HALF})); then until [ -e /tmp/go-${k} ]; do sleep 0.02; done; fi; done; : > /tmp/done-${k}\n`
  );
}

/**
 * Types L…, runs the producer up to its halfway stop, breaks the network with `fault`, lets
 * the second half print and types D… while the client is cut off, heals with `heal`,
 * then types A…; the client must have seen exactly that, in that order, with one reattach.
 */
async function outage(fault: () => void, heal: () => void): Promise<void> {
  const k = ++round;
  const { shell, lines } = await quietShell(net.through.human);
  const before = numbered(`L${k}-`, 20, 3);
  typeLines(shell, before);
  await seen(lines, before.at(-1) ?? '');
  shell.write(haltingProducer(k));
  await seen(lines, `n${String(HALF).padStart(6, '0')}`);
  fault();
  await noticed(shell);
  await net.direct.agent.files.write(`/tmp/go-${k}`, '');
  await fileAppears(net.direct.agent, `/tmp/done-${k}`);
  const during = numbered(`D${k}-`, 20, 3);
  typeLines(shell, during);
  heal();
  await seen(lines, during.at(-1) ?? '');
  const after = numbered(`A${k}-`, 20, 3);
  typeLines(shell, after);
  await seen(lines, after.at(-1) ?? '');
  expect(lines()).toEqual([...before, ...numbered('n', 2 * HALF, 6), ...during, ...after]);
  expect(shell.reconnects).toBe(1);
  await closed(shell);
}

async function closed(shell: Shell): Promise<void> {
  shell.close();
  await shell.exited;
}

describe('a shell across a broken network (real agent, TCP proxy)', () => {
  it('connections reset and refused for a while: reattached, every line exactly once, in order', async () => {
    await expect(
      outage(
        () => net.proxy.down(),
        () => net.proxy.up(),
      ),
    ).resolves.toBeUndefined();
  }, 120_000);

  it('a partition (black hole): the keep-alive notices, the shell reattaches once it heals', async () => {
    await expect(
      outage(
        () => net.proxy.blackhole(),
        () => net.proxy.up(),
      ),
    ).resolves.toBeUndefined();
  }, 120_000);

  it('resets at random points of a stream (during replays too): the stream arrives exactly once', async () => {
    const rounds = LONG ? 30 : 3;
    const count = LONG ? 60_000 : 20_000;
    const { shell, lines } = await quietShell(net.through.human);
    const expected: string[] = [];
    for (let r = 1; r <= rounds; r++) {
      // Anywhere in this round's output (count × 8 bytes): mid-line, mid-frame, mid-replay.
      const cut = net.proxy.cutAfter(1 + Math.floor(Math.random() * count * 6));
      shell.write(`for ((i=1;i<=${count};i++)); do printf 'm%06d\\n' $i; done; echo END-${r}\n`);
      expected.push(...numbered('m', count, 6), `END-${r}`);
      await cut;
      await seen(lines, `END-${r}`);
      expect(lines()).toEqual(expected);
    }
    expect(shell.reconnects).toBe(rounds);
    await closed(shell);
  }, 600_000);
});
