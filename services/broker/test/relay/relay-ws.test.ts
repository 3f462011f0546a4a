// WebSockets through the relay to a real agent (local provider, isolation none): 10 MB of
// shell output reaches a caller that reads slowly at first without the relay holding it,
// in order, exit last; close codes pass through both ways.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocket } from 'ws';
import { startLocalKit, type LocalKit } from '../providers/local-provider-kit.js';
import { exec } from '../providers/sandbox-doors.js';
import {
  lastOutcome,
  startRelayServer,
  startSandbox,
  type RelayServer,
  type Sandbox,
} from './relay-harness.js';
import { once, openCaller, type Frame } from './relay-ws-client.js';

const OUTPUT_BYTES = 10_000_000;
// printf octal escapes: the terminal's echo of the command line never contains the markers or a "y".
const TEN_MB_COMMAND =
  "printf '\\102\\105\\107\\111\\116\\n'; head -c 10000000 /dev/zero | tr '\\000' '\\171'; " +
  "printf '\\n\\105\\116\\104\\n'; exit\n";

describe('relayWebSocket: a real agent behind the relay', () => {
  let kit: LocalKit;
  let sandbox: Sandbox;
  let other: Sandbox;
  let relay: RelayServer;

  beforeAll(async () => {
    kit = await startLocalKit({ isolation: 'none' });
    [sandbox, other] = await Promise.all([startSandbox(kit), startSandbox(kit)]);
    relay = await startRelayServer(sandbox.target(['shell']));
  }, 120_000);

  afterAll(async () => {
    await relay.close();
    await kit.dispose();
  });

  it('streams 10 MB of shell output to a caller that reads slowly at first, in order, exit last', async () => {
    relay.target = sandbox.target(['shell']);
    let onPaused: (paused: true) => void = () => undefined;
    relay.wsOptions = {
      onBackpressure: (direction, paused) => direction === 'toClient' && paused && onPaused(true),
    };
    const caller = await openCaller(relay, '/v1/shell/ws');
    caller.send({ type: 'start', cols: 120, rows: 40 });
    await caller.frame((f) => f.type === 'ready', 'ready');

    const relayPaused = once<true>((fire) => (onPaused = fire), 'the relay to stop reading the agent');
    caller.socket.pause();
    caller.send({ type: 'stdin', data: TEN_MB_COMMAND });
    // The caller reads nothing until the relay has had to stop reading the agent.
    await relayPaused;
    caller.socket.resume();

    const exit = await caller.frame((f) => f.type === 'exit', 'the exit frame');
    expect(await caller.closed).toEqual({ code: 1000, reason: 'shell exited' });
    expect(caller.frames.at(-1)).toBe(exit);

    const output = caller.frames
      .filter((f: Frame) => f.type === 'stdout')
      .map((f) => f.data ?? '')
      .join('');
    const begin = output.indexOf('BEGIN\r\n') + 'BEGIN\r\n'.length;
    const end = output.indexOf('\r\nEND\r\n');
    expect(begin).toBeGreaterThan('BEGIN\r\n'.length - 1);
    expect(end - begin).toBe(OUTPUT_BYTES);
    // A search for any other character, not /^y+$/: that regex overflows the stack on 10 MB.
    expect(/[^y]/.test(output.slice(begin, end))).toBe(false);

    const outcome = await lastOutcome(relay);
    expect(outcome).toMatchObject({ kind: 'ws', closeCode: 1000, agentCloseCode: 1000, closedBy: 'agent' });
    // What the relay held for the slow caller: about its 1 MiB high-water mark, never the output.
    expect(outcome.kind === 'ws' && outcome.peakBufferedToClient).toBeLessThan(2 * 1024 * 1024);
    expect(outcome.kind === 'ws' && outcome.bytesOut).toBeGreaterThan(OUTPUT_BYTES);
    relay.wsOptions = {};
  });

  it("closes the caller 1000 after an exec exits; a caller's auth frame never reaches the agent", async () => {
    relay.target = sandbox.target(['process']);
    const seen: unknown[] = [];
    relay.wsOptions = { onClientAuth: (token) => void seen.push(token) };
    const caller = await openCaller(relay, '/v1/exec/ws');
    caller.send({ type: 'start', cmd: 'cat' });
    await caller.frame((f) => f.type === 'ready', 'ready');
    // Forwarded, this garbage would make the agent answer an error and close 1008.
    caller.send({ type: 'auth', token: 'caller-refresh-credential' });
    // However it is spelled: JSON escapes make the same frame.
    caller.socket.send('{"type":"a\\u0075th","token":"escaped-credential"}');
    caller.send({ type: 'stdin', data: 'hello through the relay', eof: true });
    const exit = await caller.frame((f) => f.type === 'exit', 'the exit frame');
    expect(exit).toMatchObject({ code: 0 });
    expect(await caller.closed).toEqual({ code: 1000, reason: 'process exited' });
    const stdout = caller.frames.filter((f) => f.type === 'stdout').map((f) => f.data);
    expect(stdout.join('')).toBe('hello through the relay');
    expect(caller.frames.some((f) => f.type === 'error')).toBe(false);
    expect(seen).toEqual(['caller-refresh-credential', 'escaped-credential']);
    expect(await lastOutcome(relay)).toMatchObject({ closeCode: 1000, agentCloseCode: 1000 });
    relay.wsOptions = {};
  });

  it("gives the caller the agent's own code and reason when the token is another sandbox's", async () => {
    const foreign = other.target(['process']);
    const direct = new WebSocket(`${sandbox.dataplane.wsBaseUrl}/v1/exec/ws`);
    direct.on('open', () => direct.send(JSON.stringify({ type: 'auth', token: foreign.token })));
    const agentSays = await once<{ code: number; reason: string }>(
      (fire) =>
        direct.on('close', (code: number, reason: Buffer) => fire({ code, reason: reason.toString() })),
      'the agent to refuse the token',
    );
    expect(agentSays.code).toBe(1008);

    relay.target = { ...sandbox.target(['process']), token: foreign.token };
    const caller = await openCaller(relay, '/v1/exec/ws');
    expect(await caller.closed).toEqual(agentSays);
    const error = await caller.frame((f) => f.type === 'error', 'the error frame');
    expect(JSON.stringify(error)).not.toContain(foreign.token);
    expect(await lastOutcome(relay)).toMatchObject({
      closeCode: 1008,
      agentCloseCode: 1008,
      closedBy: 'agent',
    });
  });

  it("closes the agent's socket with the caller's code when the caller leaves; the program ends", async () => {
    relay.target = sandbox.target(['process']);
    const marker = 600 + Math.floor(Math.random() * 300);
    const caller = await openCaller(relay, '/v1/exec/ws');
    caller.send({ type: 'start', cmd: `exec sleep ${marker}.5` });
    await caller.frame((f) => f.type === 'ready', 'ready');
    caller.socket.close(4000, 'caller leaves');
    expect(await lastOutcome(relay)).toMatchObject({
      closedBy: 'client',
      closeCode: 4000,
      closeReason: 'caller leaves',
      agentCloseCode: 4000,
    });
    // "A closed socket kills it" (docs/protocol.md#exec-socket): the agent saw the close.
    const deadline = Date.now() + 30_000;
    while ((await exec(sandbox, `pgrep -f '[s]leep ${marker}.5' || true`)).stdout !== '') {
      if (Date.now() > deadline) throw new Error('the program outlived its relayed socket');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
});
