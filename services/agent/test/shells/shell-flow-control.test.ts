import { describe, expect, it } from '@jest/globals';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent } from '../support/agent-harness.js';
import { childBytesWritten, CountingShellClient, MarkedRunCounter } from './marked-run.js';
import { useShellAgent } from './shell-agent.js';
import { ShellClient } from './shell-client.js';

const MiB = 1024 * 1024;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Prints `<<S>>`, then `bytes` times `char`, then `<<E>>`; the echoed command matches neither marker. */
function markedRun(bytes: number, char: string): string {
  return `printf '<<%s>>' S; head -c ${bytes} /dev/zero | tr '\\0' ${char}; printf '<<%s>>' E`;
}

describe('shell output flow control', () => {
  const shells = useShellAgent();

  it('loses nothing when a program prints a lot and the shell exits at once', async () => {
    // Without the drain handshake the kernel discards the unread tail about one run in three.
    for (let run = 0; run < 3; run++) {
      const client = new CountingShellClient(shells.url, new MarkedRunCounter('a'));
      await client.start(shells.agent.token(['shell']));
      client.type(`printf '<<%s>>' S; head -c 5000000 /dev/zero | tr '\\0' a; exit`);
      expect(await client.closed).toBe(1000);
      expect(client.exit).toEqual({ type: 'exit', code: 0 });
      expect(client.counter.count).toBe(5_000_000);
    }
  });

  it('loses nothing when the shell exits while a stalled client holds the PTY paused', async () => {
    const client = new CountingShellClient(shells.url, new MarkedRunCounter('b'));
    await client.start(shells.agent.token(['shell']));
    client.setReading(false);
    client.type(`printf '<<%s>>' S; head -c 8000000 /dev/zero | tr '\\0' b; exit 6`);
    await sleep(1500);
    client.setReading(true);
    expect(await client.closed).toBe(1000);
    expect(client.exit).toEqual({ type: 'exit', code: 6 });
    expect(client.counter.count).toBe(8_000_000);
  });

  it('pauses the program instead of buffering for a client that stops reading, and resumes', async () => {
    const client = new CountingShellClient(shells.url, new MarkedRunCounter('Z'));
    await client.start(shells.agent.token(['shell']));
    client.type('echo PID-$$');
    await client.until(() => /PID-\d+/.test(client.head), 10_000);
    const shellPid = Number(/PID-(\d+)/.exec(client.head)?.[1]);
    client.setReading(false);
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampleRss = async (ms: number): Promise<void> => {
      for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
        peak = Math.max(peak, process.memoryUsage().rss);
      }
    };
    client.type(markedRun(50_000_000, 'Z'));
    // Until the program stops writing: a second without progress (a loaded machine fills the
    // pipeline slowly, so no fixed wait), within a generous ceiling.
    let writtenEarly: number | undefined;
    let writtenLate: number | undefined;
    for (const end = Date.now() + 90_000; Date.now() < end;) {
      writtenEarly = childBytesWritten(shellPid, 'tr');
      await sampleRss(1000);
      writtenLate = childBytesWritten(shellPid, 'tr');
      if (writtenEarly !== undefined && writtenLate === writtenEarly) break;
    }
    // The program is blocked on a full terminal, not racing ahead into agent memory.
    expect(writtenEarly).toBeDefined();
    expect(writtenLate).toBe(writtenEarly);
    expect(writtenLate).toBeLessThan(50_000_000);
    expect(peak - baseline).toBeLessThan(64 * MiB);

    client.setReading(true);
    await client.until(() => client.counter.state === 'after', 120_000);
    expect(client.counter.count).toBe(50_000_000);
    expect(client.counter.others).toBe(0);
    client.ws.send(JSON.stringify({ type: 'close' }));
    await client.closed;
  }, 300_000);
});

describe('the concurrent shell limit', () => {
  it('refuses a shell beyond it with RATE_LIMITED and 1013, and admits one after a shell ends', async () => {
    const agent = await startTestAgent({ features: (ctx) => [shellsFeature(ctx, { maxShells: 2 })] });
    try {
      const url = `${agent.wsUrl}/v1/shell/ws`;
      const first = await ShellClient.start(url, agent.token(['shell']));
      const second = await ShellClient.start(url, agent.token(['shell']));
      // A detached shell still runs, so it still counts.
      second.close();
      const refused = await ShellClient.start(url, agent.token(['shell']));
      expect(refused.frames.at(-1)).toMatchObject({
        type: 'error',
        error: { code: 'RATE_LIMITED', retryable: true },
      });
      expect((await refused.socket.closed).code).toBe(1013);

      first.type('exit');
      await first.socket.closed;
      const admitted = await ShellClient.start(url, agent.token(['shell']));
      expect(admitted.frames.at(-1)).toMatchObject({ type: 'ready' });
      admitted.close();
    } finally {
      await agent.close();
    }
  });
});

describe('a slow observer', () => {
  it('is dropped with 1013 when it holds back a client that keeps up', async () => {
    const agent = await startTestAgent({
      features: (ctx) => [
        shellsFeature(ctx, {
          scrollbackBytes: 256 * 1024,
          socketHighWaterBytes: 64 * 1024,
          slowClientTimeoutMs: 300,
        }),
      ],
    });
    try {
      const url = `${agent.wsUrl}/v1/shell/ws`;
      const fast = new CountingShellClient(url, new MarkedRunCounter('Q'));
      await fast.start(agent.token(['shell']));
      const slow = new CountingShellClient(url, new MarkedRunCounter('Q'));
      await slow.start(agent.token(['shell:ro']), { shell_session_id: fast.shellId });
      slow.setReading(false);
      fast.type(markedRun(30_000_000, 'Q'));
      await fast.until(() => fast.counter.state === 'after', 120_000);
      expect(fast.counter.count).toBe(30_000_000);
      slow.setReading(true);
      expect(await slow.closed).toBe(1013);
      expect(slow.counter.count).toBeLessThan(30_000_000);
      fast.ws.close();
    } finally {
      await agent.close();
    }
  });
});
