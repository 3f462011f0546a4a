import { describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { useShellAgent } from './shell-agent.js';
import { TestSocket } from '../support/ws-client.js';
import { ShellClient } from './shell-client.js';
import { pidsWith, uniqueSleep, waitFor } from '../exec/exec-test-kit.js';

const shells = useShellAgent();

/** Whether a process running `marker` is its terminal's foreground job: its group is the terminal's (Linux /proc). */
function inForeground(marker: string): boolean {
  return pidsWith(marker).some((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // After "pid (comm) ": state, ppid, pgrp, session, tty_nr, tpgid.
      const [, , pgrp, , , tpgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return pgrp !== undefined && pgrp === tpgid;
    } catch {
      return false; // it ended while we looked
    }
  });
}

describe('shell endpoint', () => {
  it('refuses a token that grants neither shell nor shell:ro with 1008', async () => {
    const socket = await TestSocket.open(shells.url);
    socket.send({ type: 'auth', token: shells.agent.token(['fs:rw', 'process']) });
    const closed = await socket.closed;
    expect(closed.code).toBe(1008);
    expect(socket.frames[0]).toMatchObject({ type: 'error' });
  });

  it('starts a shell: ready, then what is typed runs and its output comes back', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    expect(client.shellId).toMatch(/^sh_[A-Za-z0-9_-]{24}$/);
    client.type('echo hello');
    await client.waitFor(/^hello$/m);
    client.close();
  });

  it('also serves the alias path /ws', async () => {
    const client = await ShellClient.start(`${shells.agent.wsUrl}/ws`, shells.agent.token(['shell']));
    client.type('echo $((6 * 7))');
    expect(await client.waitFor(/^42$/m)).toMatch(/^42$/m);
    client.close();
  });

  it('gives the terminal the requested size and follows resize', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']), { cols: 80, rows: 24 });
    client.type('stty size');
    await client.waitFor(/^24 80$/m);
    client.send({ type: 'resize', cols: 132, rows: 40 });
    client.type('stty size');
    expect(await client.waitFor(/^40 132$/m)).toMatch(/^40 132$/m);
    client.close();
  });

  it('delivers SIGINT to the foreground program, not to the shell', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    // A sleep of 900+ s nobody else runs: it cannot end on its own while the test waits.
    const marker = uniqueSleep();
    client.type(`sleep ${marker}`);
    await waitFor(() => inForeground(marker), 30_000, 'the sleep to run as the foreground job');
    client.send({ type: 'signal', signal: 'SIGINT' });
    // Read by the shell once the sleep has ended: 130 = 128 + SIGINT says the signal ended it.
    client.type('echo after-$?');
    await client.waitFor(/^after-130$/m, 60_000);
    expect(pidsWith(marker)).toEqual([]);
    client.close();
  });

  it('reports the exit code and closes normally when the shell exits', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    client.type('exit 3');
    expect(await client.nextFrame('exit')).toEqual({ type: 'exit', code: 3 });
    expect((await client.socket.closed).code).toBe(1000);
  });

  it('ends the shell on a close frame', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    client.send({ type: 'close' });
    expect(await client.nextFrame('exit')).toMatchObject({ type: 'exit', signal: 'SIGHUP', code: 129 });
    expect((await client.socket.closed).code).toBe(1000);
  });

  it('closes with 4404 when the shell id to attach to is unknown', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']), {
      shell_session_id: 'sh_nope',
    });
    expect(client.frames.at(-1)).toMatchObject({ type: 'error', error: { code: 'NOT_FOUND' } });
    expect((await client.socket.closed).code).toBe(4404);
  });

  it('does not let a shell:ro token start a shell (4403)', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell:ro']));
    expect(client.frames.at(-1)).toMatchObject({ type: 'error', error: { code: 'CAPABILITY_DENIED' } });
    expect((await client.socket.closed).code).toBe(4403);
  });

  it('refuses input before start and a second start, keeping the connection', async () => {
    const client = await ShellClient.connect(shells.url, shells.agent.token(['shell']));
    client.type('echo early');
    await client.nextFrame('error');
    expect(client.frames.at(-1)).toMatchObject({ error: { code: 'BAD_REQUEST' } });
    client.send({ type: 'start', cols: 80, rows: 24 });
    await client.nextFrame('ready');
    client.send({ type: 'start', cols: 80, rows: 24 });
    await client.socket.next((f) => f['type'] === 'error' && JSON.stringify(f).includes('CONFLICT'));
    client.type('echo still-$((1 + 1))');
    await client.waitFor(/^still-2$/m);
    client.close();
  });

  it('starts in any directory, relative to the workspace or absolute, and refuses /proc', async () => {
    const workspace = shells.agent.workspace;
    mkdirSync(path.join(workspace, 'sub'));
    symlinkSync('/etc', path.join(workspace, 'etc-link'));
    symlinkSync('/proc/self', path.join(workspace, 'proc-link'));
    for (const [cwd, expected] of [
      ['sub', path.join(workspace, 'sub')],
      ['/etc', '/etc'],
      ['etc-link', '/etc'],
      ['..', path.dirname(workspace)],
    ]) {
      const started = await ShellClient.start(shells.url, shells.agent.token(['shell']), { cwd });
      started.type('pwd');
      expect(await started.waitFor(`\n${expected}\n`)).toContain(`\n${expected}\n`);
      started.close();
    }
    for (const [cwd, code] of [
      ['/proc', 'FORBIDDEN'],
      ['proc-link', 'FORBIDDEN'],
      ['missing', 'NOT_FOUND'],
    ]) {
      const refused = await ShellClient.start(shells.url, shells.agent.token(['shell']), { cwd });
      expect({ cwd, frame: refused.frames.at(-1) }).toMatchObject({
        cwd,
        frame: { type: 'error', error: { code } },
      });
      refused.close();
    }
  });

  it("builds the environment from scratch: the request's variables, never the agent's", async () => {
    process.env['SBX_SHELL_TEST_SECRET'] = 'agent-only-value';
    try {
      const client = await ShellClient.start(shells.url, shells.agent.token(['shell']), {
        env: { GREETING: 'hi there' },
      });
      client.type('echo "[$GREETING][$SBX_SHELL_TEST_SECRET][$TERM][$HOME]"');
      const expected = `\n[hi there][][xterm-256color][${shells.agent.workspace}]\n`;
      expect(await client.waitFor(expected)).toContain(expected);
      client.close();
    } finally {
      delete process.env['SBX_SHELL_TEST_SECRET'];
    }
  });

  it('never splits a multi-byte character across frames', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    // 60 000 three-byte characters: PTY reads of 4 KiB–64 KiB cannot all end on a character.
    client.type('s=€€€€€€€€€€; for i in $(seq 1 6000); do printf %s "$s"; done; printf \'<<%s>>\' END');
    const text = await client.waitFor('<<END>>', 20_000);
    const stdout = client.frames.filter((f) => f['type'] === 'stdout');
    expect(stdout.every((f) => f['encoding'] === undefined)).toBe(true);
    const run = /€+<<END>>/.exec(text)?.[0] ?? '';
    expect(run.length - '<<END>>'.length).toBe(60_000);
    client.close();
  });

  it('takes base64 input and sends output that is not UTF-8 as base64', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    const line = "printf 'BIN:\\377\\376:END'\n";
    client.send({ type: 'stdin', data: Buffer.from(line).toString('base64'), encoding: 'base64' });
    // The echoed command holds the escapes as text; the output holds the two raw bytes.
    await client.waitFor('BIN:\ufffd\ufffd:END');
    const output = Buffer.concat(client.chunks);
    const at = output.indexOf('BIN:\xff', 0, 'latin1');
    expect(output.subarray(at, at + 10)).toEqual(Buffer.from('BIN:\xff\xfe:END', 'latin1'));
    expect(client.frames.some((f) => f['type'] === 'stdout' && f['encoding'] === 'base64')).toBe(true);
    client.close();
  });

  it('reports live shells in /healthz', async () => {
    const headers = { authorization: `Bearer ${shells.agent.token(['shell:ro'])}` };
    const health = async () => (await fetch(`${shells.agent.httpUrl}/healthz`, { headers })).json();
    const before = await health();
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    const during = (await health()) as { shells: number };
    expect(during.shells).toBe((before as { shells: number }).shells + 1);
    client.send({ type: 'close' });
    await client.socket.closed;
  });
});
