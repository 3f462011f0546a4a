import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { ShellClient } from './shell-client.js';

describe('shells confined by bubblewrap', () => {
  let agent: TestAgent;
  let url: string;

  beforeAll(async () => {
    agent = await startTestAgent({
      confined: { network: false },
      features: (ctx) => [shellsFeature(ctx)],
    });
    url = `${agent.wsUrl}/v1/shell/ws`;
  });

  afterAll(async () => {
    await agent.close();
  });

  it('has a controlling terminal and job control inside the sandbox', async () => {
    const client = await ShellClient.start(url, agent.token(['shell']));
    client.type('tty; sleep 30 & jobs; echo JOBS-$((1 + 1))');
    const text = await client.waitFor(/^JOBS-2$/m);
    // A sandbox started alone has no terminal devices of its own (the host's /dev/pts stays
    // hidden), so `tty` names none; the shell still owns its terminal: job control works.
    expect(text).toMatch(/^not a tty$/m);
    expect(text).toMatch(/^\[1\]\+\s+Running\s+sleep 30 &$/m);
    client.type('fg');
    await client.waitFor(/^sleep 30$/m);
    client.send({ type: 'signal', signal: 'SIGINT' });
    client.type('echo BACK-$((2 + 2))');
    await client.waitFor(/^BACK-4$/m, 5000);
    client.send({ type: 'close' });
    await client.socket.closed;
  });

  it("runs in the sandbox's pid namespace with a read-only root and a writable workspace", async () => {
    const client = await ShellClient.start(url, agent.token(['shell']));
    client.type(
      'touch /usr/sbx-probe 2>/dev/null || echo RO-ROOT; touch ok && echo RW-WS; echo NS-$(ls /proc | grep -c "^[0-9]")',
    );
    const text = await client.waitFor(/^NS-\d+$/m);
    expect(text).toMatch(/^RO-ROOT$/m);
    expect(text).toMatch(/^RW-WS$/m);
    // Only the sandbox's own processes are visible (its init, the shell and what it runs), none of the host's.
    expect(Number(/^NS-(\d+)$/m.exec(text)?.[1])).toBeLessThan(15);
    client.type('exit 7');
    expect(await client.nextFrame('exit')).toEqual({ type: 'exit', code: 7 });
  });
});
