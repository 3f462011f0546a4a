import { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  BrokerClient,
  BrokerSession,
  NotFoundError,
  RefreshingCredentials,
  SandboxClient,
  SecurityError,
  SessionExpiredError,
  type ProcessInfo,
  type Shell,
} from '../src/index.js';
import { startRealBroker, type RealBroker } from './support.js';

/** The broker's default policy: agents get files and processes, humans files and shells. */
const HUMAN_CAPABILITIES = ['fs:rw', 'shell'];
let real: RealBroker;
let broker: BrokerClient;
/** The human's binding; shells run through it. */
let session: BrokerSession;
/** An agent's binding on the same thread, so the same sandbox; files and exec run through it. */
let agentSession: BrokerSession;
let sandbox: SandboxClient;
let human: SandboxClient;

/** Everything a shell printed since `record` was called, and a wait for a condition on it. */
function record(shell: Shell): {
  text: () => string;
  until: (pattern: RegExp, timeoutMs?: number) => Promise<void>;
} {
  let text = '';
  const waiters = new Set<() => void>();
  shell.onData((chunk) => {
    text += chunk.toString('utf8');
    for (const check of waiters) check();
  });
  const until = (pattern: RegExp, timeoutMs = 30_000): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (!pattern.test(text)) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no ${String(pattern)} in the output; it ends with:\n${text.slice(-500)}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return { text: () => text, until };
}

/** The numbers of the lines `<prefix><n>` in the output, in order. */
function numberedLines(text: string, prefix: string): number[] {
  return [...text.matchAll(new RegExp(`^${prefix}(\\d+)\\r?$`, 'gm'))].map((m) => Number(m[1]));
}

/** Polls the process until it has exited (a condition, not a fixed sleep; generous deadline). */
async function exitedProcess(processId: string): Promise<ProcessInfo> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const info = await sandbox.exec.get(processId);
    if (info.status === 'exited') return info;
    if (Date.now() > deadline) throw new Error(`process ${processId} is still running`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const oneToN = (n: number): number[] => Array.from({ length: n }, (_v, i) => i + 1);

beforeAll(async () => {
  real = await startRealBroker();
  broker = new BrokerClient({ baseUrl: real.harness.url, apiKey: real.apiKey });
  agentSession = await BrokerSession.ensure(broker, {
    scope: { type: 'thread', id: 'thr_sdk' },
    actor: { type: 'agent', id: 'agt_sdk' },
  });
  session = await BrokerSession.ensure(broker, {
    scope: { type: 'thread', id: 'thr_sdk' },
    actor: { type: 'human', id: 'usr_sdk' },
  });
  sandbox = agentSession.sandbox();
  human = session.sandbox();
}, 120_000);

afterAll(async () => {
  await session?.release().catch(() => undefined);
  await agentSession?.release().catch(() => undefined);
  await real?.close();
}, 60_000);

describe('BrokerClient against a real broker', () => {
  it('ensure, get (MVP), inspect, refresh (both shapes), heartbeat', async () => {
    const again = await broker.get({ thread_id: 'thr_sdk' });
    expect(again.sandbox.id).toBe(session.response.sandbox.id);
    expect(agentSession.response.sandbox.id).toBe(session.response.sandbox.id);
    const view = await broker.inspect(again.session_id);
    expect(view.binding.sandbox_id).toBe(session.response.binding.sandbox_id);
    const full = await broker.refresh(again.session_id);
    const mvp = await broker.refresh(again.session_id, { mvp: true });
    expect(full.access_token).not.toBe(mvp.token);
    const beat = await broker.heartbeat(again.session_id);
    expect(Date.parse(beat.lease_expires_at)).toBeGreaterThan(Date.now());
  });

  it('get on a thread without a sandbox is a typed 404', async () => {
    await expect(broker.get({ thread_id: 'thr_none' })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a wrong API key is a SecurityError, not retried', async () => {
    const stranger = new BrokerClient({ baseUrl: real.harness.url, apiKey: 'sbx_wrong' });
    await expect(stranger.ensure({ thread_id: 'thr_x' })).rejects.toBeInstanceOf(SecurityError);
  });

  it('await using releases the session', async () => {
    let id = '';
    {
      await using owned = await BrokerSession.ensure(broker, { thread_id: 'thr_dispose' });
      id = owned.sessionId;
      expect((await broker.inspect(id)).session_id).toBe(id);
    }
    // A released binding is over: the broker answers 410.
    await expect(broker.inspect(id)).rejects.toBeInstanceOf(SessionExpiredError);
  }, 60_000);

  it('a heartbeat that resumes a suspended sandbox moves the session and its client to the new agent', async () => {
    await using owned = await BrokerSession.ensure(broker, { thread_id: 'thr_resume' });
    const files = owned.sandbox();
    await files.files.write('kept.txt', 'survives suspension');
    const sandboxId = owned.response.sandbox.id;
    const before = owned.endpoints.httpBaseUrl;
    // What the reaper does to an idle sandbox: stop its agent (the workspace stays), mark it suspended.
    await real.harness.provider.stop(sandboxId);
    await real.harness.repositories.sandboxes.transition(sandboxId, 'suspended');
    const beat = await owned.heartbeat();
    expect(beat.state).toBe('active');
    expect(owned.endpoints.httpBaseUrl).not.toBe(before);
    expect(await files.files.readText('kept.txt')).toBe('survives suspension');
  }, 60_000);
});

describe('SandboxClient files and exec', () => {
  it('says where the workspace is: info() agrees with the session answer', async () => {
    const workspace = agentSession.workspacePath;
    expect(workspace).toBe(agentSession.response.dataplane.workspace_path);
    expect(workspace).toBe(agentSession.response.sandbox.workspace_path);
    expect(session.workspacePath).toBe(workspace);
    // Under bubblewrap processes see the workspace at /workspace; unconfined, at its host path.
    expect(workspace).toMatch(
      real.harness.provider.isolation === 'bubblewrap' ? /^\/workspace$/ : /^\/(?!workspace$)./,
    );
    const info = await sandbox.info();
    expect(info).toEqual({
      sandbox_id: agentSession.response.sandbox.id,
      workspace_path: workspace,
      home: workspace,
      version: expect.any(String),
    });
    // Any token of the sandbox may ask, a human's too.
    expect((await human.info()).workspace_path).toBe(workspace);
  });

  it('writes, reads, lists, stats, moves and removes files; answers name absolute sandbox paths', async () => {
    const ws = agentSession.workspacePath;
    expect(await sandbox.files.mkdir('work/sub', { parents: true })).toMatchObject({
      path: `${ws}/work/sub`,
    });
    const written = await sandbox.files.write('work/a.txt', 'hello');
    expect(written).toMatchObject({ size: 5, path: `${ws}/work/a.txt` });
    expect(await sandbox.files.readText('work/a.txt')).toBe('hello');
    // The absolute form names the same file.
    expect(await sandbox.files.readText(`${ws}/work/a.txt`)).toBe('hello');
    const bytes = new Uint8Array([0, 255, 1, 254]);
    await sandbox.files.write(`${ws}/work/b.bin`, bytes);
    expect(Array.from(await sandbox.files.read('work/b.bin'))).toEqual([0, 255, 1, 254]);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('part1-'));
        controller.enqueue(new TextEncoder().encode('part2'));
        controller.close();
      },
    });
    await sandbox.files.write('work/c.txt', stream);
    const reader = (await sandbox.files.readStream('work/c.txt')).getReader();
    let streamed = '';
    for (let r = await reader.read(); !r.done; r = await reader.read())
      streamed += new TextDecoder().decode(r.value);
    expect(streamed).toBe('part1-part2');
    const listing = await sandbox.files.list('work');
    expect(listing.path).toBe(`${ws}/work`);
    expect(listing.entries.map((e) => e.name)).toEqual(['a.txt', 'b.bin', 'c.txt', 'sub']);
    expect(await sandbox.files.stat('work/sub')).toMatchObject({ type: 'dir', path: `${ws}/work/sub` });
    expect(await sandbox.files.stat('.')).toMatchObject({ type: 'dir', path: ws });
    expect(await sandbox.files.move('work/a.txt', `${ws}/work/sub/a.txt`)).toMatchObject({
      path: `${ws}/work/sub/a.txt`,
    });
    expect(await sandbox.files.readText('work/sub/a.txt')).toBe('hello');
    await sandbox.files.remove('work', { recursive: true });
    await expect(sandbox.files.stat('work')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('runs a command to completion', async () => {
    const result = await sandbox.exec.run({ cmd: 'echo out; echo err >&2; exit 3' });
    expect(result).toMatchObject({ exit_code: 3, stdout: 'out\n', stderr: 'err\n' });
  });

  it('runs a background process with stdin and signals', async () => {
    const started = await sandbox.exec.start({ argv: ['cat'] });
    await sandbox.exec.stdin(started.process_id, 'typed\n', { eof: true });
    await exitedProcess(started.process_id);
    expect((await sandbox.exec.output(started.process_id)).stdout?.data).toBe('typed\n');
    const sleeper = await sandbox.exec.start({ argv: ['sleep', '60'] });
    await sandbox.exec.signal(sleeper.process_id, 'SIGTERM');
    const slept = await exitedProcess(sleeper.process_id);
    expect(slept.signal).toBe('SIGTERM');
    expect((await sandbox.exec.list()).map((p) => p.process_id)).toContain(sleeper.process_id);
    await sandbox.exec.remove(started.process_id);
    await sandbox.exec.remove(sleeper.process_id);
  });
});

describe('shells', () => {
  it('an agent token cannot open a shell: a SecurityError, not retried', async () => {
    await expect(sandbox.openShell()).rejects.toBeInstanceOf(SecurityError);
  });

  it('opens, types, resizes, reattaches by id and exits', async () => {
    const shell = await human.openShell({ cols: 100, rows: 30 });
    const log = record(shell);
    shell.write('echo "A$((40+2))"\n');
    await log.until(/^A42\r?$/m);
    shell.resize(120, 40);
    shell.write('stty size\n');
    await log.until(/^40 120\r?$/m);
    const id = shell.id;
    shell.detach();
    const again = await human.attachShell(id);
    const againLog = record(again);
    again.write('echo "B$((1+1))"\n');
    await againLog.until(/^B2\r?$/m);
    again.write('exit 7\n');
    expect((await again.exited).code).toBe(7);
  }, 60_000);

  it('keeps the output exactly once when the socket is killed mid-stream', async () => {
    const shell = await human.openShell();
    const log = record(shell);
    shell.write('for i in $(seq 1 400); do echo L$i; sleep 0.005; done; echo DONE\n');
    await log.until(/^L50\r?$/m);
    const tcp: unknown = shell.socket === undefined ? undefined : Reflect.get(shell.socket, '_socket');
    expect(tcp).toBeInstanceOf(Socket);
    if (tcp instanceof Socket) tcp.destroy();
    await log.until(/^DONE\r?$/m, 60_000);
    expect(shell.reconnects).toBeGreaterThanOrEqual(1);
    expect(numberedLines(log.text(), 'L')).toEqual(oneToN(400));
    shell.close();
    await shell.exited;
  }, 90_000);

  it('refreshes a token that expires mid-stream without the user noticing', async () => {
    const short = real.mintShortToken(session.response.sandbox.id, session.sessionId, HUMAN_CAPABILITIES, 3);
    const credentials = new RefreshingCredentials({
      initial: short,
      refresh: async () => {
        const next = await broker.refresh(session.sessionId);
        return { token: next.access_token, expiresAt: new Date(next.expires_at) };
      },
    });
    const client = new SandboxClient({
      httpBaseUrl: session.response.dataplane.http_base_url,
      wsBaseUrl: session.response.dataplane.ws_base_url,
      tokens: credentials,
    });
    const shell = await client.openShell();
    const log = record(shell);
    shell.write('for i in $(seq 1 50); do echo T$i; sleep 0.1; done; echo FIN\n');
    await log.until(/^FIN\r?$/m, 60_000);
    expect(Date.now()).toBeGreaterThan(short.expiresAt.getTime());
    expect(credentials.current().token).not.toBe(short.token);
    expect(numberedLines(log.text(), 'T')).toEqual(oneToN(50));
    expect(await client.files.stat('.')).toMatchObject({ type: 'dir', path: session.workspacePath });
    shell.close();
    await shell.exited;
    credentials.close();
  }, 90_000);
});
