import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { WebSocket, type RawData } from 'ws';
import { useShellAgent } from './shell-agent.js';
import { ShellClient } from './shell-client.js';

const shells = useShellAgent();

/**
 * A shell whose output arrives as binary messages; resolves once it closed. The client
 * stops reading now and then, so frames queue up in the agent unwritten.
 */
async function stallingBinaryShellRun(line: string): Promise<{ output: Buffer; code: number }> {
  const ws = new WebSocket(shells.url);
  const raw: Buffer[] = [];
  ws.on('message', (data: RawData, isBinary: boolean) => {
    if (!isBinary) return;
    raw.push(Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer));
    if (raw.length % 20 !== 1) return;
    ws.pause();
    setTimeout(() => ws.resume(), 100);
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  await new Promise((resolve) => ws.once('open', resolve));
  ws.send(JSON.stringify({ type: 'auth', token: shells.agent.token(['shell']) }));
  ws.send(JSON.stringify({ type: 'start', cols: 80, rows: 24, output: 'binary' }));
  ws.send(JSON.stringify({ type: 'stdin', data: `${line}\n` }));
  const code = await closed;
  return { output: Buffer.concat(raw), code };
}

describe('shell terminal input and output', () => {
  it('delivers bulk output byte for byte, in order, as binary messages', async () => {
    // 16 MB of distinct lines: a reused or reordered frame would show as a wrong line.
    const { output, code } = await stallingBinaryShellRun(
      `printf '<<%s>>' S; seq 1 2000000; printf '<<%s>>' E; exit`,
    );
    expect(code).toBe(1000);
    const text = output.toString('latin1');
    const body = text.slice(text.lastIndexOf('<<S>>') + 5, text.lastIndexOf('<<E>>'));
    // The terminal turns each newline into CR LF (onlcr).
    const expected = execFileSync('seq', ['1', '2000000'], { maxBuffer: 64 * 1024 * 1024 })
      .toString('latin1')
      .replaceAll('\n', '\r\n');
    expect(body.length).toBe(expected.length);
    expect(body === expected).toBe(true);
  });

  it('takes a paste far larger than the terminal buffer without losing or reordering a byte', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    const paste = randomBytes(768 * 1024).toString('base64');
    client.type(
      `stty raw -echo; echo RAW-$((1+1)); head -c ${paste.length} > paste.txt; stty sane; echo DONE-$((2+2))`,
    );
    await client.waitFor(/^RAW-2$/m);
    for (let at = 0; at < paste.length; at += 32 * 1024)
      client.send({ type: 'stdin', data: paste.slice(at, at + 32 * 1024) });
    await client.waitFor(/DONE-4/, 30_000);
    expect(readFileSync(path.join(shells.agent.workspace, 'paste.txt'), 'utf8') === paste).toBe(true);
    client.send({ type: 'close' });
  });

  it('reports the exit although a background job still holds the terminal open', async () => {
    const client = await ShellClient.start(shells.url, shells.agent.token(['shell']));
    client.type('sleep 60 & echo BG-$!; exit 4');
    const background = Number(/BG-(\d+)/.exec(await client.waitFor(/BG-\d+/))?.[1]);
    try {
      expect(await client.nextFrame('exit')).toEqual({ type: 'exit', code: 4 });
      expect((await client.socket.closed).code).toBe(1000);
    } finally {
      process.kill(background, 'SIGKILL');
    }
  });
});
