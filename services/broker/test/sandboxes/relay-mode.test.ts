// Relay mode (DATAPLANE_RELAY=on, docs/sandboxes.md): session answers point at the broker's
// `/v1/sandboxes/{id}/dp`, and every data-plane route works there with the same token, HTTP
// and WebSocket alike. The broker checks the token itself, so a revocation is refused at
// the broker on the very next call; a caller's API key works too, within its caller scopes.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WebSocket } from 'ws';
import {
  ErrorEnvelope,
  GetBindingResponse,
  HeartbeatResponse,
  RefreshTokenResponse,
  SessionResponse,
  ThreadHeartbeatResponse,
  ThreadSandboxResponse,
  type CallerScope,
} from '@sbx/protocol';
import { ALL_CALLER_SCOPES, bearer } from '../support/broker-harness.js';
import { backends } from '../support/test-database.js';
import { until } from '../support/until.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;

/** A ceiling for waiting on a socket's frames and close, never a sleep. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const ceiling = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, ceiling]).finally(() => clearTimeout(timer));
}

interface ShellOutcome {
  /** The shell said `ready` (and then ran `echo`, whose output is `output`). */
  readonly ready: boolean;
  readonly output: string;
  /** The `error` frame's error, when one came. */
  readonly error?: { readonly code: string; readonly message: string };
  readonly closeCode: number;
}

/**
 * Opens `<wsBase>/v1/shell/ws`, authenticates with `credential` in the first frame and asks
 * for a PTY; a ready shell echoes a marker and exits. Resolves when the socket closes.
 */
async function shellAt(wsBase: string, credential: string): Promise<ShellOutcome> {
  const socket = new WebSocket(`${wsBase}/v1/shell/ws`);
  socket.on('error', () => {});
  let ready = false;
  let output = '';
  let error: ShellOutcome['error'];
  const closed = new Promise<number>((resolve) => socket.once('close', (code: number) => resolve(code)));
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) return;
    const frame = JSON.parse(data.toString('utf8')) as {
      type: string;
      data?: string;
      error?: { code: string; message: string };
    };
    if (frame.type === 'error') error = frame.error;
    if (frame.type === 'stdout') output += frame.data ?? '';
    if (frame.type === 'ready') {
      ready = true;
      socket.send(JSON.stringify({ type: 'stdin', data: 'echo "shell-$((40 + 2))"; exit\n' }));
    }
  });
  await within(
    new Promise<void>((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    }),
    10_000,
    'socket open',
  );
  socket.send(JSON.stringify({ type: 'auth', token: credential }));
  socket.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
  const closeCode = await within(closed, 30_000, 'socket close');
  return { ready, output, ...(error === undefined ? {} : { error }), closeCode };
}

/** `[status, error.code]` of a refusal in the error envelope. */
async function refusalOf(res: Response): Promise<[number, string]> {
  return [res.status, ErrorEnvelope.parse(await res.json()).error.code];
}

const CALLER_SCOPES: readonly CallerScope[] = [
  'read:sandbox',
  'write:sandbox',
  'exec:sandbox',
  'attach:sandbox',
];
/** Every caller scope of the data plane but `scope`. */
const allBut = (scope: CallerScope) => CALLER_SCOPES.filter((s) => s !== scope);

describe(`relay mode [${backend.name}]`, () => {
  const broker = useLocalBroker(backend, {
    isolation: 'none',
    settings: { provisioningWaitMs: 20_000 },
    dataplaneRelay: true,
  });
  // The owner of `session`'s sandbox: every key below with this principal id may reach it.
  const owner = `principal_${randomUUID()}`;
  let user: string;
  let admin: string;
  let session: ThreadSandboxResponse;

  beforeAll(async () => {
    user = await broker.apiKey({
      scopes: ['read:sandbox', 'write:sandbox', 'attach:sandbox'],
      principalType: 'user',
      principalId: owner,
    });
    admin = await broker.apiKey({ scopes: ALL_CALLER_SCOPES });
    const opened = await request(broker.url)
      .post(`/threads/thr_${randomUUID()}/sandbox`)
      .set(bearer(user))
      .send({ scopes: ['fs:rw', 'shell'] });
    if (opened.status !== 200) throw new Error(`negotiation answered ${opened.status}`);
    session = ThreadSandboxResponse.parse(opened.body);
  }, 60_000);

  const dp = (path: string, credential: string, init: RequestInit = {}) =>
    fetch(`${session.endpoints.http}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${credential}`, ...(init.headers as Record<string, string>) },
    });

  it("hands out the broker's address, where the agent's routes answer with the same token", async () => {
    expect(session.endpoints.http).toBe(`${broker.url}/v1/sandboxes/${session.sandbox_id}/dp`);
    expect(session.endpoints.ws).toBe(
      `${broker.url.replace('http', 'ws')}/v1/sandboxes/${session.sandbox_id}/dp`,
    );
    const info = await dp('/v1/info', session.token);
    expect([info.status, ((await info.json()) as { sandbox_id: string }).sandbox_id]).toEqual([
      200,
      session.sandbox_id,
    ]);
    const up = await dp('/v1/files/upload?path=notes/a.txt', session.token, {
      method: 'POST',
      body: 'relayed hello',
    });
    expect(up.status).toBeLessThan(300);
    const down = await dp('/v1/files/download?path=notes/a.txt', session.token);
    expect(await down.text()).toBe('relayed hello');
    // The token has no `process`: the agent's own refusal comes back as it is.
    const exec = await dp('/v1/exec', session.token, {
      method: 'POST',
      body: JSON.stringify({ cmd: 'true' }),
      headers: { 'content-type': 'application/json' },
    });
    expect(exec.status).toBe(403);
    expect((await dp('/v1/no-such-route', session.token)).status).toBe(404);
  });

  it('relays a shell over the WebSocket route with the same token', async () => {
    const socket = new WebSocket(`${session.endpoints.ws}/v1/shell/ws`);
    let output = '';
    const closed = new Promise<number>((resolve) => socket.on('close', (code: number) => resolve(code)));
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) return;
      const frame = JSON.parse(data.toString('utf8')) as { type: string; data?: string };
      if (frame.type === 'ready')
        socket.send(JSON.stringify({ type: 'stdin', data: 'echo "relay-$((20 + 1))"; exit\n' }));
      if (frame.type === 'stdout') output += frame.data ?? '';
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    socket.send(JSON.stringify({ type: 'auth', token: session.token }));
    socket.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
    expect(await closed).toBe(1000);
    expect(output).toContain('relay-21');
  }, 60_000);

  it('takes an API key within its caller scopes', async () => {
    expect((await dp('/v1/info', user)).status).toBe(200);
    const exec = await dp('/v1/exec', user, {
      method: 'POST',
      body: JSON.stringify({ cmd: 'true' }),
      headers: { 'content-type': 'application/json' },
    });
    expect([exec.status, ((await exec.json()) as { error: { code: string } }).error.code]).toEqual([
      403,
      'FORBIDDEN',
    ]);
    const stranger = await broker.apiKey({ tenantId: `tenant_${randomUUID()}`, scopes: ['read:sandbox'] });
    expect((await dp('/v1/info', stranger)).status).toBe(404);
  });

  it('refuses a revoked token at the broker on the very next call', async () => {
    const extra = await request(broker.url)
      .post(`/threads/thr_${randomUUID()}/sandbox`)
      .set(bearer(user))
      .send({ scopes: ['fs:ro'] });
    const token = extra.body.token as string;
    const base = extra.body.endpoints.http as string;
    expect((await fetch(`${base}/v1/info`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
      200,
    );
    const jti = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).jti as string;
    const revoked = await request(broker.url).post('/admin/revocations').set(bearer(admin)).send({ jti });
    expect(revoked.status).toBe(200);
    const after = await fetch(`${base}/v1/info`, { headers: { authorization: `Bearer ${token}` } });
    expect(after.status).toBe(401);
    // The broker's own refusal, not the agent's (which learns of it through the pushed list).
    expect(((await after.json()) as { error: { message: string } }).error.message).toMatch(
      /refused: revoked/,
    );
  }, 60_000);

  /** A key of the sandbox's owner holding exactly `scopes`. */
  const ownerKey = (scopes: readonly CallerScope[]) =>
    broker.apiKey({ scopes, principalType: 'user', principalId: owner });
  const execBody = (cmd: string): RequestInit => ({
    method: 'POST',
    body: JSON.stringify({ cmd }),
    headers: { 'content-type': 'application/json' },
  });

  describe('API keys through /dp, one caller scope at a time', () => {
    it('read:sandbox alone downloads a file; a key lacking it is refused 403', async () => {
      const path = `scoped/read-${randomUUID()}.txt`;
      const up = await dp(`/v1/files/upload?path=${path}`, session.token, {
        method: 'POST',
        body: 'to read',
      });
      expect(up.status).toBeLessThan(300);
      const down = await dp(`/v1/files/download?path=${path}`, await ownerKey(['read:sandbox']));
      expect([down.status, await down.text()]).toEqual([200, 'to read']);
      const refused = await dp(`/v1/files/download?path=${path}`, await ownerKey(allBut('read:sandbox')));
      expect(await refusalOf(refused)).toEqual([403, 'FORBIDDEN']);
    });

    it('write:sandbox alone uploads a file; a key lacking it is refused 403 and nothing is written', async () => {
      const written = `scoped/write-${randomUUID()}.txt`;
      const up = await dp(`/v1/files/upload?path=${written}`, await ownerKey(['write:sandbox']), {
        method: 'POST',
        body: 'written by a write-only key',
      });
      expect(up.status).toBeLessThan(300);
      expect(await (await dp(`/v1/files/download?path=${written}`, session.token)).text()).toBe(
        'written by a write-only key',
      );
      const refusedPath = `scoped/refused-${randomUUID()}.txt`;
      const refused = await dp(
        `/v1/files/upload?path=${refusedPath}`,
        await ownerKey(allBut('write:sandbox')),
        {
          method: 'POST',
          body: 'must not land',
        },
      );
      expect(await refusalOf(refused)).toEqual([403, 'FORBIDDEN']);
      expect((await dp(`/v1/files/download?path=${refusedPath}`, session.token)).status).toBe(404);
    });

    it('exec:sandbox alone runs a command; a key lacking it, or holding only admin:sandbox, is refused 403', async () => {
      const ran = await dp('/v1/exec', await ownerKey(['exec:sandbox']), execBody('echo "exec-$((6 * 7))"'));
      expect(ran.status).toBe(200);
      expect(await ran.json()).toMatchObject({ exit_code: 0, stdout: 'exec-42\n' });
      const lacking = await dp('/v1/exec', await ownerKey(allBut('exec:sandbox')), execBody('true'));
      expect(await refusalOf(lacking)).toEqual([403, 'FORBIDDEN']);
      // admin:sandbox lifts owner scoping (the sandbox is found) but grants no operation.
      const adminOnly = await broker.apiKey({ scopes: ['admin:sandbox'] });
      const asAdmin = await dp('/v1/exec', adminOnly, execBody('true'));
      expect(await refusalOf(asAdmin)).toEqual([403, 'FORBIDDEN']);
    });

    it('mints a new relay token once the agent refuses a kept one whose jti was revoked', async () => {
      const key = await ownerKey(['exec:sandbox', 'read:sandbox']);
      const marker = randomUUID();
      /** The jti of the newest logged run of `cmd`, as the agent's command log names it. */
      const jtiOf = async (cmd: string) => {
        const page = await dp('/v1/commands/log?limit=200', key);
        const items = ((await page.json()) as { items: { command: string; jti: string }[] }).items;
        return items.filter((entry) => entry.command === cmd).at(-1)?.jti;
      };
      const before = `echo before-${marker}`;
      expect((await dp('/v1/exec', key, execBody(before))).status).toBe(200);
      const kept = (await jtiOf(before))!;
      const revoked = await request(broker.url)
        .post('/admin/revocations')
        .set(bearer(admin))
        .send({ jti: kept });
      expect(revoked.status).toBe(200);
      // Until the agents have the revocation the kept token still works; the first call they
      // refuse (401) retires it, and the next one runs under a token minted for it.
      const after = `echo after-${marker}`;
      const statuses: number[] = [];
      await until(
        async () => {
          const ran = await dp('/v1/exec', key, execBody(after));
          statuses.push(ran.status);
          return ran.status === 200 && (await jtiOf(after)) !== kept;
        },
        'a relayed exec under a new token',
        100,
      );
      expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(1);
      expect(statuses.every((status) => status === 200 || status === 401)).toBe(true);
    });

    it('attach:sandbox alone opens /dp/v1/shell/ws; exec:sandbox or admin:sandbox alone get an error frame and 1008', async () => {
      const attached = await shellAt(session.endpoints.ws, await ownerKey(['attach:sandbox']));
      expect([attached.ready, attached.closeCode, attached.error]).toEqual([true, 1000, undefined]);
      expect(attached.output).toContain('shell-42');
      const execOnly = await shellAt(session.endpoints.ws, await ownerKey(['exec:sandbox']));
      expect(execOnly).toMatchObject({ ready: false, error: { code: 'FORBIDDEN' }, closeCode: 1008 });
      const lacking = await shellAt(session.endpoints.ws, await ownerKey(allBut('attach:sandbox')));
      expect(lacking).toMatchObject({ ready: false, error: { code: 'FORBIDDEN' }, closeCode: 1008 });
      const adminOnly = await shellAt(
        session.endpoints.ws,
        await broker.apiKey({ scopes: ['admin:sandbox'] }),
      );
      expect(adminOnly).toMatchObject({ ready: false, error: { code: 'FORBIDDEN' }, closeCode: 1008 });
    }, 60_000);
  });

  it('answers /v1/sandbox/sessions ensure, get, refresh and heartbeat with the relay address', async () => {
    const thread = `thr_${randomUUID()}`;
    const negotiate = (mode: 'ensure' | 'get') =>
      request(broker.url)
        .post('/v1/sandbox/sessions')
        .set(bearer(user))
        .send({ scope: { type: 'thread', id: thread }, mode, requested_capabilities: ['fs:ro'] });
    const ensured = await negotiate('ensure');
    expect(ensured.status).toBe(200);
    const ensure = SessionResponse.parse(ensured.body);
    const http = `${broker.url}/v1/sandboxes/${ensure.binding.sandbox_id}/dp`;
    const relayed = { http_base_url: http, ws_base_url: http.replace(/^http/, 'ws') };
    expect(ensure.dataplane).toMatchObject(relayed);
    expect(ensure.sandbox).toMatchObject(relayed);

    const got = await negotiate('get');
    expect(got.status).toBe(200);
    expect(SessionResponse.parse(got.body).dataplane).toMatchObject(relayed);
    const binding = await request(broker.url)
      .get(`/v1/sandbox/sessions/${ensure.session_id}`)
      .set(bearer(user));
    expect(binding.status).toBe(200);
    const view = GetBindingResponse.parse(binding.body);
    expect([view.dataplane, view.sandbox]).toMatchObject([relayed, relayed]);

    // A refresh answers credentials only: the new token works at the relayed address.
    const refreshed = await request(broker.url)
      .post(`/v1/sandbox/sessions/${ensure.session_id}/refresh`)
      .set(bearer(user))
      .send({});
    expect(refreshed.status).toBe(200);
    const fresh = RefreshTokenResponse.parse(refreshed.body).token;
    expect(fresh).not.toBe(ensure.token);
    expect((await fetch(`${http}/v1/info`, { headers: { authorization: `Bearer ${fresh}` } })).status).toBe(
      200,
    );

    const beat = await request(broker.url)
      .post(`/v1/sandbox/sessions/${ensure.session_id}/heartbeat`)
      .set(bearer(user))
      .send({});
    expect(beat.status).toBe(200);
    expect(HeartbeatResponse.parse(beat.body).dataplane).toMatchObject(relayed);
    const threadBeat = await request(broker.url)
      .post(`/threads/${thread}/sandbox/heartbeat`)
      .set(bearer(user))
      .send({});
    expect(threadBeat.status).toBe(200);
    expect(ThreadHeartbeatResponse.parse(threadBeat.body).endpoints).toEqual({
      http: relayed.http_base_url,
      ws: relayed.ws_base_url,
    });
  }, 60_000);

  it('refuses a revoked token at the broker when a relayed shell socket authenticates with it', async () => {
    const opened = await request(broker.url)
      .post(`/threads/thr_${randomUUID()}/sandbox`)
      .set(bearer(user))
      .send({ scopes: ['shell'] });
    expect(opened.status).toBe(200);
    const shellSession = ThreadSandboxResponse.parse(opened.body);
    const before = await shellAt(shellSession.endpoints.ws, shellSession.token);
    expect([before.ready, before.closeCode]).toEqual([true, 1000]);
    const jti = JSON.parse(Buffer.from(shellSession.token.split('.')[1]!, 'base64url').toString('utf8'))
      .jti as string;
    const revoked = await request(broker.url).post('/admin/revocations').set(bearer(admin)).send({ jti });
    expect(revoked.status).toBe(200);
    const after = await shellAt(shellSession.endpoints.ws, shellSession.token);
    expect(after).toMatchObject({ ready: false, error: { code: 'UNAUTHENTICATED' }, closeCode: 1008 });
    // The broker's own refusal, not the agent's (which learns of it through the pushed list).
    expect(after.error?.message).toMatch(/refused: revoked/);
  }, 60_000);
});
