// Answers that break the protocol (a body that is not JSON or not the route's schema, a
// proxy's HTML page, an unreadable WebSocket frame) surface as the SDK's ProtocolError
// naming the route, never as a bare SyntaxError or ZodError. Real servers on port 0.
import { afterEach, describe, expect, it } from '@jest/globals';
import { BrokerClient, InternalError, ProtocolError, SandboxClient, SbxClientError } from '../src/index.js';
import { fakeAgentClient, fixedTokens, startFakeAgent, type FakeAgent } from './fake-agent.js';
import { startScriptedHttp, type ScriptedHttp } from './scripted-http.js';

const TOKEN = 'tok_secret_4f1a9c';
const RETRY = { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 10 };
const HEARTBEAT = 'POST /v1/sandbox/sessions/sess_1/heartbeat';
let servers: { close(): Promise<void> }[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function scripted(
  status: number,
  body: string,
  contentType = 'application/json',
): Promise<ScriptedHttp> {
  const server = await startScriptedHttp({ status, body, contentType });
  servers.push(server);
  return server;
}

async function failureOf(call: Promise<unknown>): Promise<ProtocolError> {
  const failure = await call.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(failure).toBeInstanceOf(ProtocolError);
  const error = failure as ProtocolError;
  expect(error).toBeInstanceOf(InternalError);
  expect(error).toBeInstanceOf(SbxClientError);
  expect(error.code).toBe('INTERNAL');
  expect(error.name).toBe('ProtocolError');
  expect(error.message).not.toContain(TOKEN);
  return error;
}

describe('malformed HTTP answers', () => {
  it('a 200 body that is not JSON: a ProtocolError naming the route, not retried', async () => {
    const server = await scripted(200, `{"token":"${TOKEN}", lease`);
    const broker = new BrokerClient({ baseUrl: server.url, apiKey: TOKEN, retry: RETRY });
    const error = await failureOf(broker.heartbeat('sess_1'));
    expect(error.message).toBe(`heartbeat: ${HEARTBEAT} answered HTTP 200 with a body that is not JSON`);
    expect(error.route).toBe(HEARTBEAT);
    expect(error.httpStatus).toBe(200);
    expect(error.cause).toBeInstanceOf(SyntaxError);
    expect(server.seen.count).toBe(1);
  });

  it('JSON of the wrong shape: the schema problem by path, not the values', async () => {
    const server = await scripted(200, JSON.stringify({ type: 'file', size: TOKEN }));
    const sandbox = new SandboxClient({
      httpBaseUrl: `${server.url}/agent/`,
      wsBaseUrl: 'ws://127.0.0.1:9',
      tokens: fixedTokens({ token: TOKEN, expiresAt: new Date(Date.now() + 60_000) }),
      retry: RETRY,
      timeoutMs: 5_000,
    });
    const error = await failureOf(sandbox.files.stat('a.txt'));
    expect(error.route).toBe('GET /agent/v1/files/stat');
    expect(error.message).toMatch(
      /^stat a\.txt: GET \/agent\/v1\/files\/stat answered HTTP 200 with a body that does not match its schema \(.*size: /,
    );
    expect(error.cause).toHaveProperty('issues');
  });

  it("a proxy's HTML 502 page: a ProtocolError with the status, not the page", async () => {
    const page = `<html><body><h1>502 Bad Gateway</h1><!-- ${TOKEN} --></body></html>`;
    const server = await scripted(502, page, 'text/html; charset=utf-8');
    const broker = new BrokerClient({ baseUrl: server.url, apiKey: 'k', retry: RETRY });
    const error = await failureOf(broker.heartbeat('sess_1'));
    expect(error.message).toBe(
      `heartbeat: ${HEARTBEAT} answered HTTP 502 Bad Gateway (text/html) without an error envelope`,
    );
    expect(error.httpStatus).toBe(502);
    expect(error.cause).toBeInstanceOf(SyntaxError);
    expect(server.seen.count).toBe(1);
  });
});

describe('malformed WebSocket frames', () => {
  const agents: FakeAgent[] = [];
  afterEach(async () => {
    for (const agent of agents.splice(0)) await agent.close();
  });

  it('a frame that is not JSON before auth_ok fails the connect', async () => {
    const agent = await startFakeAgent({
      beforeAuth: (conn) => {
        conn.socket.send(`auth_ok ${TOKEN}`);
        return new Promise(() => undefined);
      },
      onStart: () => undefined,
    });
    agents.push(agent);
    const sandbox = fakeAgentClient(agent, RETRY);
    const error = await failureOf(sandbox.exec.stream({ cmd: 'true' }));
    expect(error.message).toBe('WS /v1/exec/ws: the server sent a frame that is not JSON');
    expect(agent.connections).toHaveLength(1);
  });

  it('a frame of the wrong shape ends the stream with the frame type named; an unknown type is skipped', async () => {
    const agent = await startFakeAgent({
      onStart: (conn) => {
        conn.send({ type: 'ready', process_id: 'proc_1' });
        conn.send({ type: 'progress', percent: 50 });
        conn.send({ type: 'stdout', data: 'hi\n' });
        conn.send({ type: 'stdout', data: 42, token: TOKEN });
      },
    });
    agents.push(agent);
    const sandbox = fakeAgentClient(agent, RETRY);
    const chunks: string[] = [];
    const run = await sandbox.exec.stream({ cmd: 'echo hi' }, { onStdout: (b) => chunks.push(b.toString()) });
    const error = await failureOf(run.wait());
    expect(error.route).toBe('WS /v1/exec/ws');
    expect(error.message).toMatch(
      /^WS \/v1\/exec\/ws: the server sent a "stdout" frame that does not match its schema \(data: /,
    );
    expect(chunks).toEqual(['hi\n']);
  });
});
