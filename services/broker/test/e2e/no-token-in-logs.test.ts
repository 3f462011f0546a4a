// No secret in any log line: the whole system as an operator runs it (the
// broker's entry point, a real agent per sandbox whose log the broker relays),
// at debug level, through negotiate, refresh, exec, a shell, file operations,
// token exchange, API key creation and failed attempts. Every token and key
// minted or guessed along the way is then searched for in everything both
// processes wrote.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

interface Session {
  session_id: string;
  token: string;
  sandbox: { id: string; http_base_url: string; ws_base_url: string };
}

describe('no token in any log line (broker and agent, debug level)', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-logs-'));
  const logs: string[] = [];
  const secrets = new Set<string>();
  let broker: ChildProcess;
  let url = '';
  let adminKey = '';

  beforeAll(async () => {
    broker = spawn(`${root}node_modules/.bin/tsx`, ['services/broker/src/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        PORT: '0',
        BROKER_DATA_DIR: dataDir,
        LOCAL_ISOLATION: 'bubblewrap',
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'json',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface({ input: broker.stderr! }).on('line', (line) => logs.push(line));
    const lines = createInterface({ input: broker.stdout! });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('broker did not start')), 60_000);
      lines.on('line', (line) => {
        url = /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? url;
        const key = /admin API key.*: (sbk_\S+)/.exec(line)?.[1];
        if (key !== undefined) adminKey = key;
        // The banner prints the generated admin key once, on purpose: not a log line.
        else logs.push(line);
        if (url !== '' && adminKey !== '') {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    secrets.add(adminKey);
  }, 90_000);

  afterAll(async () => {
    const exited = new Promise((resolve) => broker.once('exit', resolve));
    broker.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = (route: string, init: { method?: string; body?: string; key?: string } = {}) =>
    fetch(`${url}${route}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${init.key ?? adminKey}`, 'content-type': 'application/json' },
      ...(init.body === undefined ? {} : { body: init.body }),
    });

  it('keeps every minted token, API key and guessed key out of the logs', async () => {
    const negotiated = await call('/v1/sandbox/sessions', {
      method: 'POST',
      body: JSON.stringify({ thread_id: 'thr_logs', mode: 'ensure' }),
    });
    expect(negotiated.status).toBe(200);
    const session = (await negotiated.json()) as Session;
    secrets.add(session.token);

    const refreshed = await call(`/v1/sandbox/sessions/${session.session_id}/refresh`, {
      method: 'POST',
      body: '{}',
    });
    expect(refreshed.status).toBe(200);
    const token = ((await refreshed.json()) as { token: string }).token;
    secrets.add(token);

    const exchanged = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: token,
        subject_token_type: 'urn:sbx:params:oauth:token-type:capability',
        actor_token: adminKey,
        actor_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      }).toString(),
    });
    expect(exchanged.status).toBe(200);
    expect(exchanged.headers.get('cache-control')).toBe('no-store');
    const narrow = ((await exchanged.json()) as { access_token: string }).access_token;
    secrets.add(narrow);

    const created = await call('/admin/api-keys', {
      method: 'POST',
      body: JSON.stringify({
        tenant_id: 'tnt_logs',
        principal_id: 'usr_logs',
        principal_type: 'user',
        scopes: ['read:sandbox'],
      }),
    });
    expect(created.status).toBe(201);
    const apiKey = ((await created.json()) as { key: string }).key;
    secrets.add(apiKey);
    expect((await call('/v1/sandbox/sessions/ses_missing', { key: apiKey })).status).toBe(404);
    for (let i = 0; i < 3; i++) {
      const guess = `sbk_guess_${i}_${'q'.repeat(32)}`;
      secrets.add(guess);
      expect((await call('/v1/sandbox/sessions/ses_missing', { key: guess })).status).toBe(401);
    }

    const dataplane = session.sandbox.http_base_url;
    for (const bearer of [token, narrow]) {
      const auth = { authorization: `Bearer ${bearer}` };
      const put = await fetch(`${dataplane}/files/notes/a.txt`, { method: 'PUT', headers: auth, body: 'hi' });
      expect([200, 201, 204]).toContain(put.status);
      expect((await fetch(`${dataplane}/files/notes/a.txt`, { headers: auth })).status).toBe(200);
      expect((await fetch(`${dataplane}/files/notes/?t=${bearer}`, { headers: auth })).status).toBeLessThan(
        500,
      );
    }
    const exec = await fetch(`${dataplane}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd: 'echo started', timeout_ms: 10_000 }),
    });
    expect(exec.status).toBe(200);
    // A wrong token on the agent too, over HTTP and WebSocket.
    expect(
      (await fetch(`${dataplane}/v1/info`, { headers: { authorization: `Bearer ${token}x` } })).status,
    ).toBe(401);

    const ws = new WebSocket(`${session.sandbox.ws_base_url}/v1/exec/ws`);
    ws.on('error', () => undefined);
    await new Promise((resolve) => ws.once('open', resolve));
    const closed = new Promise((resolve) => ws.once('close', resolve));
    ws.send(JSON.stringify({ type: 'auth', token: `${narrow}x` }));
    await closed;

    // A human's shell in the same sandbox: a session of its own, a PTY, typed input.
    const attached = await call('/v1/sandbox/sessions', {
      method: 'POST',
      body: JSON.stringify({
        scope: { type: 'thread', id: 'thr_logs' },
        mode: 'attach_only',
        actor: { type: 'human', id: 'alice' },
        requested_capabilities: ['fs_read', 'shell'],
      }),
    });
    expect(attached.status).toBe(200);
    const human = (await attached.json()) as Session;
    secrets.add(human.token);
    const shell = new WebSocket(`${human.sandbox.ws_base_url}/v1/shell/ws`);
    const output: string[] = [];
    shell.on('message', (raw: Buffer) => output.push(raw.toString('utf8')));
    await new Promise((resolve) => shell.once('open', resolve));
    shell.send(JSON.stringify({ type: 'auth', token: human.token }));
    shell.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
    shell.send(JSON.stringify({ type: 'stdin', data: 'echo shell-$((2+3))\n' }));
    for (let i = 0; i < 100 && !output.join('').includes('shell-5'); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(output.join('')).toContain('shell-5');
    shell.close();
    expect((await call(`/v1/sandbox/sessions/${human.session_id}`, { method: 'DELETE' })).status).toBe(204);

    const released = await call(`/v1/sandbox/sessions/${session.session_id}`, { method: 'DELETE' });
    expect(released.status).toBe(204);
    // Let the agent's last lines reach the broker's log.
    await new Promise((resolve) => setTimeout(resolve, 1000));

    expect(logs.length).toBeGreaterThan(20);
    expect(logs.some((line) => line.includes('"service":"agent"') || line.includes('agent'))).toBe(true);
    const everything = logs.join('\n');
    const leaked = [...secrets].filter((secret) => everything.includes(secret));
    expect(leaked).toEqual([]);
    // Nor the signature part alone (what makes a JWT usable).
    for (const jwt of [session.token, token, narrow]) {
      const signature = jwt.split('.')[2] ?? '';
      expect(signature.length).toBeGreaterThan(10);
      expect(everything).not.toContain(signature);
    }
  }, 120_000);
});
