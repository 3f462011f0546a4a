// Opaque-token mode on the agent (docs/architecture.md D20): tokens are checked by asking an
// introspection endpoint, here a real HTTP server of the test's own that answers like the
// broker's POST /oauth/introspect and checks the agent's sandbox credential. Answers stand
// for at most 1 s; a token turned inactive is refused within that, open shells close 1008;
// a broker that does not answer means 503, never an accepted request.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { checkIntrospectionSecret, newOpaqueToken } from '@sbx/tokens';
import { createAuthenticator } from '../../src/http/authenticator.js';
import { createIntrospectingAuthenticator } from '../../src/http/introspecting-authenticator.js';
import { filesFeature } from '../../src/http/files/files-feature.js';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { ShellClient } from '../shells/shell-client.js';
import { startTestAgent, TEST_ISSUER, type TestAgent } from '../support/agent-harness.js';
import type { Closed } from '../support/ws-client.js';

const CEILING_MS = 5000;
/** What the fake broker knows: each token's scopes, and whether it is still active. */
const tokens = new Map<string, { scope: string; active: boolean }>();
let mode: 'ok' | 'hang' | 'fail' = 'ok';
let calls = 0;
let introspection: Server;
let agent: TestAgent;

function answer(token: string): object {
  const known = tokens.get(token);
  if (known === undefined || !known.active) return { active: false };
  const iat = Math.floor(Date.now() / 1000);
  return {
    active: true,
    scope: known.scope,
    token_type: 'Bearer',
    iss: TEST_ISSUER,
    sub: 'usr_ann',
    aud: agent.ctx.sandboxId,
    jti: `tok_${token.slice(4, 12)}`,
    iat,
    exp: iat + 300,
    session_id: 'ssn_1',
  };
}

async function startIntrospection(): Promise<Server> {
  const server = createServer((req, res) => {
    calls += 1;
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      if (mode === 'hang') return;
      const basic = Buffer.from(
        (req.headers.authorization ?? '').replace(/^Basic /, ''),
        'base64',
      ).toString();
      const [id = '', secret = ''] = basic.split(':');
      const client = decodeURIComponent(id);
      const authorized =
        client === agent.ctx.sandboxId && checkIntrospectionSecret([agent.key], client, secret);
      const status = mode === 'fail' ? 500 : authorized ? 200 : 401;
      const token = new URLSearchParams(body).get('token') ?? '';
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status === 200 ? answer(token) : { error: 'invalid_client' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

function issue(scope: string): string {
  const token = newOpaqueToken();
  tokens.set(token, { scope, active: true });
  return token;
}

const get = (path: string, token: string) =>
  fetch(`${agent.httpUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
const list = (token: string) =>
  get(`/v1/files/list?path=${encodeURIComponent(agent.sandboxWorkspace)}`, token);

async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const ceiling = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`nothing within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, ceiling]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  introspection = await startIntrospection();
  const { port } = introspection.address() as AddressInfo;
  agent = await startTestAgent({
    features: (ctx) => [filesFeature(ctx), shellsFeature(ctx)],
    authenticator: ({ keys, sandboxId, now }) =>
      createIntrospectingAuthenticator({
        url: `http://127.0.0.1:${port}/oauth/introspect`,
        keys,
        sandboxId,
        issuer: TEST_ISSUER,
        maxTtlSeconds: 3600,
        now,
        timeoutMs: 300,
      }),
  });
});
afterAll(async () => {
  await agent.close();
  introspection.closeAllConnections();
  await new Promise((resolve) => introspection.close(resolve));
});

describe('opaque tokens on the agent', () => {
  it('accepts an active token on a files route, asks once per second, and checks scopes', async () => {
    const token = issue('fs:ro');
    const before = calls;
    expect((await list(token)).status).toBe(200);
    expect((await list(token)).status).toBe(200);
    expect(calls - before).toBe(1);
    const shellOnly = issue('shell');
    expect((await list(shellOnly)).status).toBe(403);
  });

  it('refuses unknown tokens and JWTs; a JWT is not even sent', async () => {
    expect((await list(newOpaqueToken())).status).toBe(401);
    const before = calls;
    const res = await list(agent.token(['fs:ro']));
    expect([res.status, calls]).toEqual([401, before]);
  });

  it('refuses a token within 1 s of the broker turning it inactive', async () => {
    const token = issue('fs:ro');
    expect((await list(token)).status).toBe(200);
    tokens.set(token, { scope: 'fs:ro', active: false });
    const started = Date.now();
    const refused = async (): Promise<number> => {
      for (;;) {
        const res = await list(token);
        if (res.status !== 200) return res.status;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    expect(await within(refused(), CEILING_MS)).toBe(401);
    const ms = Date.now() - started;
    process.stdout.write(`inactive opaque token refused after ${ms} ms\n`);
    expect(ms).toBeLessThan(1500);
  });

  it('a shell WebSocket authenticates with an opaque token and closes 1008 once it is inactive', async () => {
    const token = issue('shell');
    const shell = await ShellClient.start(`${agent.wsUrl}/v1/shell/ws`, token);
    shell.type('echo opaque-ok');
    await shell.waitFor(/^opaque-ok$/m);
    tokens.set(token, { scope: 'shell', active: false });
    const closed: Closed = await within(shell.socket.closed, CEILING_MS);
    expect(closed).toEqual({ code: 1008, reason: 'token is not active' });
  });

  it("with an offline fallback, a JWT of the sandbox's key (the readiness probe's) is verified at once", () => {
    const { keys, sandboxId, now } = agent.ctx;
    const rules = { keys, sandboxId, issuer: TEST_ISSUER, maxTtlSeconds: 3600, now };
    const auth = createIntrospectingAuthenticator({
      ...rules,
      url: 'http://127.0.0.1:9/unused',
      offline: createAuthenticator(rules),
    });
    const before = calls;
    const verified = auth.authenticate(agent.token(['fs:ro']));
    expect(verified).not.toBeInstanceOf(Promise);
    expect(calls).toBe(before);
  });

  it('a broker that fails, hangs or is gone is 503, never an accept', async () => {
    const token = issue('fs:ro');
    mode = 'fail';
    expect((await list(token)).status).toBe(503);
    mode = 'hang';
    const res = await list(token);
    expect([res.status, await res.json()]).toEqual([
      503,
      { error: expect.objectContaining({ code: 'BACKEND_UNAVAILABLE' }) },
    ]);
    mode = 'ok';
    expect((await list(token)).status).toBe(200);
    const later = issue('fs:ro');
    introspection.closeAllConnections();
    await new Promise((resolve) => introspection.close(resolve));
    expect((await list(later)).status).toBe(503);
  });
});
