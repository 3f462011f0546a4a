import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { call } from '../exec/exec-test-kit.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import { ShellClient } from './shell-client.js';

let agent: TestAgent;
beforeAll(async () => {
  agent = await startTestAgent({ features: (ctx) => [shellsFeature(ctx), execFeature(ctx)] });
});
afterAll(async () => agent.close());

/** Lists the descriptors of the process that runs it, by where they lead; a terminal's master side is /dev/ptmx. */
const LIST_FDS = 'for fd in /proc/$$/fd/*; do readlink "$fd"; done';

describe("one user's terminal is out of reach of every other process", () => {
  it('another shell and an exec hold no descriptor of an open shell', async () => {
    const url = `${agent.wsUrl}/v1/shell/ws`;
    const first = await ShellClient.start(url, agent.token(['shell']));
    first.type('echo FIRST-$((1+1))');
    await first.waitFor(/^FIRST-2$/m);

    const second = await ShellClient.start(url, agent.token(['shell']));
    second.type(`(${LIST_FDS}) | grep -c ptmx; echo SECOND-$((2+2))`);
    const seen = await second.waitFor(/^SECOND-4$/m);
    expect(seen).toMatch(/^0\nSECOND-4$/m);

    const exec = await call(agent, agent.token(['process']), 'POST', '/v1/exec', { cmd: LIST_FDS });
    expect(exec.status).toBe(200);
    expect(String(exec.body['stdout'])).not.toContain('ptmx');
    // The listing works: the exec's own stdout is among them.
    expect(String(exec.body['stdout'])).toMatch(/^(socket|pipe):/m);

    first.send({ type: 'close' });
    second.send({ type: 'close' });
  });
});
