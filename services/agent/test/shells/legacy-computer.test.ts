import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocket, type RawData } from 'ws';
import { mintCapabilityToken } from '@sbx/tokens';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { startTestAgent, TEST_ISSUER, type TestAgent } from '../support/agent-harness.js';
import { plainText, rawText } from './shell-client.js';

/** A legacy client (docs/protocol.md#legacy-endpoints): token in the query, raw text both ways. */
class LegacyClient {
  readonly ws: WebSocket;
  output = '';
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly failed: Promise<string>;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.failed = new Promise((resolve) => this.ws.on('error', (err) => resolve(err.message)));
    this.closed = new Promise((resolve) =>
      this.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    this.ws.on('message', (data: RawData) => (this.output += rawText(data)));
  }

  /** The plain output once `pattern` occurs in it, or when waiting longer is pointless. */
  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(plainText(this.output)) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return plainText(this.output);
  }
}

describe('legacy WS /computer', () => {
  let agent: TestAgent;
  const computer = (query: string): string => `${agent.wsUrl}/computer?${query}`;

  beforeAll(async () => {
    agent = await startTestAgent({ features: (ctx) => [shellsFeature(ctx, { legacyEndpoints: true })] });
  });

  afterAll(async () => {
    await agent.close();
  });

  it('is not served unless enabled', async () => {
    const plain = await startTestAgent({ features: (ctx) => [shellsFeature(ctx)] });
    try {
      const client = new LegacyClient(
        `${plain.wsUrl}/computer?token=${plain.token(['shell'])}&room=thr_test`,
      );
      expect(await client.failed).toMatch(/404/);
    } finally {
      await plain.close();
    }
  });

  it('runs raw text in a persistent shell for the token’s room', async () => {
    const token = agent.token(['shell']);
    const first = new LegacyClient(computer(`token=${token}&room=thr_test&elevated=false`));
    await new Promise((resolve) => first.ws.once('open', resolve));
    first.ws.send('echo legacy-$((1 + 1))\n');
    expect(await first.waitFor(/^legacy-2$/m)).toMatch(/^legacy-2$/m);
    first.ws.close();
    await first.closed;

    const again = new LegacyClient(computer(`token=${token}&room=thr_test`));
    expect(await again.waitFor(/^legacy-2$/m)).toMatch(/^legacy-2$/m);
    again.ws.close();
  });

  it('accepts any room with a wildcard-room token', async () => {
    const token = mintCapabilityToken({
      key: agent.key,
      issuer: TEST_ISSUER,
      subject: 'usr_ops',
      sandboxId: agent.ctx.sandboxId,
      scopes: ['shell'],
      ttlSeconds: 60,
      threadId: '*',
    }).token;
    const client = new LegacyClient(computer(`token=${token}&room=thr_elsewhere`));
    await new Promise((resolve) => client.ws.once('open', resolve));
    client.ws.send('echo wild-$((3 + 3))\n');
    expect(await client.waitFor(/^wild-6$/m)).toMatch(/^wild-6$/m);
    client.ws.close();
  });

  it('refuses another room with the legacy reason and logs who tried', async () => {
    const token = agent.token(['shell'], { sub: 'usr_intruder' });
    const client = new LegacyClient(computer(`token=${token}&room=thr_other`));
    expect(await client.closed).toEqual({ code: 1008, reason: 'Unauthorized Room Access' });
    const line = agent.logs.find((l) => l.includes('unauthorized room access')) ?? '';
    expect(line).toContain('usr_intruder');
    expect(agent.logs.join('')).not.toContain(token);
  });

  it('refuses elevation, which no capability grants', async () => {
    const client = new LegacyClient(computer(`token=${agent.token(['shell'])}&room=thr_test&elevated=true`));
    expect(await client.closed).toEqual({ code: 1008, reason: 'Elevated access not granted' });
  });

  it('rejects missing and insufficient tokens with the legacy reasons', async () => {
    const missing = new LegacyClient(computer('room=thr_test'));
    expect(await missing.closed).toEqual({ code: 1008, reason: 'Missing token' });
    const observer = new LegacyClient(computer(`token=${agent.token(['shell:ro'])}&room=thr_test`));
    expect(await observer.closed).toEqual({ code: 1008, reason: 'Invalid token' });
  });
});
