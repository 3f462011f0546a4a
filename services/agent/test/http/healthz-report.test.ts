import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFeature } from '../../src/http/exec/exec-feature.js';
import { filesFeature } from '../../src/http/files/files-feature.js';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { call, uniqueSleep } from '../exec/exec-test-kit.js';
import { ShellClient } from '../shells/shell-client.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';

interface Report {
  boot_id: string;
  usage: { commands_run: number; file_bytes_in: number; file_bytes_out: number };
  activity: {
    processes: { id: string; command: string; started_at: string; running: boolean }[];
    shells: { id: string; opened_at: string }[];
  };
}

describe('agent /healthz report: boot id, usage counters, processes and shells', () => {
  let agent: TestAgent;
  let token: string;
  beforeAll(async () => {
    agent = await startTestAgent({
      features: (ctx) => [filesFeature(ctx), execFeature(ctx), shellsFeature(ctx)],
    });
    token = agent.token(['fs:rw', 'process', 'shell']);
  });
  afterAll(async () => agent.close());

  const report = async (): Promise<Report> => {
    const res = await call(agent, agent.token(['shell:ro']), 'GET', '/healthz');
    expect(res.status).toBe(200);
    return res.body as unknown as Report;
  };

  /** Asks again until `accept` holds: the agent reports what it sees now. */
  const reportWhen = async (accept: (r: Report) => boolean): Promise<Report> => {
    for (;;) {
      const r = await report();
      if (accept(r)) return r;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  it('starts at zero with a UUID boot id that stays the same', async () => {
    const first = await report();
    expect(first.boot_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.usage).toEqual({ commands_run: 0, file_bytes_in: 0, file_bytes_out: 0 });
    expect(first.activity).toEqual({ processes: [], shells: [] });
    expect((await report()).boot_id).toBe(first.boot_id);
  });

  it('counts programs, upload and download bytes, and lists processes and shells', async () => {
    const before = await report();
    const exec = await call(agent, token, 'POST', '/v1/exec', { cmd: 'echo hi' });
    expect(exec.status).toBe(200);

    const marker = uniqueSleep();
    const started = await call(agent, token, 'POST', '/v1/processes', { argv: ['sleep', marker] });
    expect(started.status).toBe(201);

    const content = 'x'.repeat(1000);
    const put = await fetch(`${agent.httpUrl}/files/data.txt`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}` },
      body: content,
    });
    expect(put.status).toBe(201);
    const get = await fetch(`${agent.httpUrl}/files/data.txt`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await get.text()).toBe(content);
    const range = await fetch(`${agent.httpUrl}/files/data.txt`, {
      headers: { authorization: `Bearer ${token}`, range: 'bytes=0-99' },
    });
    expect((await range.arrayBuffer()).byteLength).toBe(100);

    const shell = await ShellClient.start(`${agent.wsUrl}/v1/shell/ws`, token);
    try {
      // A one-shot exec still running is listed too, while it runs.
      const running = call(agent, token, 'POST', '/v1/exec', { argv: ['sleep', '0.5'] });
      const now = await reportWhen((r) => r.activity.processes.some((p) => p.command === 'sleep 0.5'));
      expect(now.boot_id).toBe(before.boot_id);
      expect(now.usage).toEqual({ commands_run: 3, file_bytes_in: 1000, file_bytes_out: 1100 });
      expect(now.activity.shells).toEqual([{ id: shell.shellId, opened_at: expect.any(String) }]);
      expect(now.activity.processes).toEqual(
        expect.arrayContaining([
          {
            id: (started.body as { process_id: string }).process_id,
            command: `sleep ${marker}`,
            started_at: (started.body as { started_at: string }).started_at,
            running: true,
          },
          {
            id: expect.stringMatching(/^exec_/),
            command: 'sleep 0.5',
            started_at: expect.any(String),
            running: true,
          },
        ]),
      );
      expect((await running).status).toBe(200);
      const after = await reportWhen((r) => !r.activity.processes.some((p) => p.command === 'sleep 0.5'));
      expect(after.usage.commands_run).toBe(3);
    } finally {
      shell.close();
    }
    // Closing the socket detaches; the shell itself ends only with `close` or the idle grace.
    const killed = await call(
      agent,
      token,
      'DELETE',
      `/v1/processes/${(started.body as { process_id: string }).process_id}`,
    );
    expect(killed.status).toBeLessThan(300);
    const end = await reportWhen((r) => r.activity.processes.length === 0);
    expect(end.usage.commands_run).toBe(3);
  });

  it('cuts a long command to 200 characters', async () => {
    const long = `echo ${'a'.repeat(300)}; sleep 0.3`;
    const running = call(agent, token, 'POST', '/v1/exec', { cmd: long });
    const seen = await reportWhen((r) => r.activity.processes.some((p) => p.command.startsWith('echo aaa')));
    expect(seen.activity.processes.find((p) => p.command.startsWith('echo aaa'))?.command).toBe(
      long.slice(0, 200),
    );
    expect((await running).status).toBe(200);
  });

  it('still tells an anonymous caller only that it is alive', async () => {
    const res = await call(agent, undefined, 'GET', '/healthz');
    expect(res.body).toEqual({ status: 'ok' });
  });
});
