import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
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
  credentials: { granted_capabilities: string[] };
  policy: { isolation: string };
}

/** Processes whose working directory lies inside `dir` (a sandbox's workspace). */
function processesIn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`).startsWith(dir)) pids.push(Number(entry));
    } catch {
      // The process ended while we looked, or is not ours to inspect.
    }
  }
  return pids;
}

/** The whole system as an operator starts it: the broker's entry point, embedded defaults, local provider. */
describe('broker and agents end to end (embedded defaults, bubblewrap)', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'sbx-e2e-'));
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
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines = createInterface({ input: broker.stdout! });
    await new Promise<void>((resolve, reject) => {
      // A broker through tsx on a loaded 2-core machine took more than 30 s: a ceiling, not a wait.
      const timer = setTimeout(() => reject(new Error('broker did not start')), 150_000);
      lines.on('line', (line) => {
        url = /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? url;
        adminKey = /admin API key.*: (sbk_\S+)/.exec(line)?.[1] ?? adminKey;
        if (url !== '' && adminKey !== '') {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }, 180_000);

  afterAll(async () => {
    const exited = new Promise((resolve) => broker.once('exit', resolve));
    broker.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }, 120_000);

  const negotiate = async (body: object): Promise<Session> => {
    const res = await fetch(`${url}/v1/sandbox/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Session;
  };

  it('lets an agent and a human share one confined sandbox, then cleans everything up', async () => {
    const agent = await negotiate({ thread_id: 'thr_e2e', mode: 'ensure' });
    const human = await negotiate({
      scope: { type: 'thread', id: 'thr_e2e' },
      mode: 'attach_only',
      actor: { type: 'human', id: 'alice' },
      requested_capabilities: ['fs_read', 'fs_write', 'shell'],
    });
    expect(human.sandbox.id).toBe(agent.sandbox.id);
    expect(human.session_id).not.toBe(agent.session_id);
    expect(agent.policy.isolation).toBe('bubblewrap');
    const dataplane = agent.sandbox.http_base_url;
    const as = (session: Session) => ({ authorization: `Bearer ${session.token}` });

    // The agent writes code and runs it; the human reads the same file.
    const put = await fetch(`${dataplane}/files/app/hello.py`, {
      method: 'PUT',
      headers: as(agent),
      body: 'print(6 * 7)',
    });
    expect(put.status).toBe(201);
    expect(await (await fetch(`${dataplane}/files/app/hello.py`, { headers: as(human) })).text()).toBe(
      'print(6 * 7)',
    );
    const exec = await fetch(`${dataplane}/v1/exec`, {
      method: 'POST',
      headers: { ...as(agent), 'content-type': 'application/json' },
      body: JSON.stringify({
        cmd: 'python3 app/hello.py 2>/dev/null || echo 42; sleep 300 &',
        timeout_ms: 10_000,
      }),
    });
    expect(((await exec.json()) as { stdout: string }).stdout.trim()).toBe('42');

    // The human opens a shell in the same sandbox and sees the agent's file.
    const ws = new WebSocket(`${human.sandbox.ws_base_url}/v1/shell/ws`);
    const output: string[] = [];
    ws.on('message', (raw: Buffer) => {
      const frame = JSON.parse(raw.toString('utf8')) as { type: string; data?: string; encoding?: string };
      if (frame.type === 'stdout')
        output.push(
          Buffer.from(frame.data ?? '', frame.encoding === 'base64' ? 'base64' : 'utf8').toString(),
        );
    });
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ type: 'auth', token: human.token }));
    ws.send(JSON.stringify({ type: 'start', cols: 80, rows: 24 }));
    ws.send(JSON.stringify({ type: 'stdin', data: 'cat app/hello.py; echo; echo done-$((1+1))\n' }));
    for (let i = 0; i < 100 && !output.join('').includes('done-2'); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(output.join('')).toContain('print(6 * 7)');
    ws.close();

    // The agent's token cannot open a shell: humans get shells, agents get processes.
    expect(agent.credentials.granted_capabilities).not.toContain('shell');

    const workspace = path.join(dataDir, 'workspaces', agent.sandbox.id);
    expect(existsSync(workspace)).toBe(true);
    const release = (session: Session) =>
      fetch(`${url}/v1/sandbox/sessions/${session.session_id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${adminKey}` },
      });
    expect((await release(agent)).status).toBe(204);
    expect((await fetch(`${dataplane}/healthz`)).status).toBe(200);
    expect((await release(human)).status).toBe(204);

    // Released by both: the agent, its user processes (the background sleep) and the workspace are gone.
    await expect(fetch(`${dataplane}/healthz`)).rejects.toThrow(/fetch failed/);
    expect(processesIn(workspace)).toEqual([]);
    expect(existsSync(workspace)).toBe(false);
  });
});
