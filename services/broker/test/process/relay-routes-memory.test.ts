// The relay's streams through the broker's own routes, in a broker process of its own so its
// memory is its own (services/broker/test/relay has the relay functions alone): 500 MiB
// uploaded with POST /v1/sandboxes/{id}/files while the broker's RSS is sampled, and 10 MB
// of shell output (1.25 million numbered lines) through WS /v1/sandboxes/{id}/sessions/new to
// a caller that reads slowly.
// Real Postgres, the local provider's real agent under bubblewrap.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WebSocket } from 'ws';
import { newDataDirOutsideTmp, removeDataDir } from '../providers/local-provider-kit.js';
import { uploadZeros } from '../relay/zero-upload.js';
import { backends, useTestDatabase } from '../support/test-database.js';
import { deploymentEnv, operatorKey, startBrokerProcess, type BrokerProcess } from './broker-process.js';

const postgres = backends.find((backend) => backend.name === 'postgres')!;
const MiB = 1024 * 1024;
const UPLOAD_BYTES = 500 * MiB;
const MAX_GROWTH_BYTES = 150 * MiB;
const SHELL_OUTPUT_BYTES = 10 * 1000 * 1000;

function rssOf(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1] ?? 0) * 1024;
}

/** The highest RSS of `pid` seen while `work` runs, sampled every 20 ms. */
async function peakRssDuring<T>(pid: number, work: Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = rssOf(pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
  try {
    return { result: await work, peak: Math.max(peak, rssOf(pid)) };
  } finally {
    clearInterval(sampler);
  }
}

const upload = (url: string, key: string, bytes: number) =>
  uploadZeros(url, bytes, { method: 'POST', headers: { authorization: `Bearer ${key}` } });

(postgres.available ? describe : describe.skip)('the relay through the broker routes', () => {
  const db = useTestDatabase(postgres);
  const dataDir = newDataDirOutsideTmp();
  const adminKey = operatorKey();
  let broker: BrokerProcess;
  let sandboxId = '';

  beforeAll(async () => {
    broker = await startBrokerProcess(deploymentEnv({ databaseUrl: db().url, dataDir, adminKey }));
    const created = await fetch(`${broker.url}/v1/sandboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
    sandboxId = ((await created.json()) as { id: string }).id;
  }, 120_000);
  afterAll(async () => {
    await broker?.kill('SIGTERM');
    removeDataDir(dataDir);
  });

  const run = async (cmd: string): Promise<string> => {
    const res = await fetch(`${broker.url}/v1/sandboxes/${sandboxId}/commands`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd, timeout_ms: 60_000 }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { stdout: string }).stdout;
  };

  it('uploads 500 MiB with POST /v1/sandboxes/{id}/files while the broker grows < 150 MiB', async () => {
    const url = (path: string) => `${broker.url}/v1/sandboxes/${sandboxId}/files?path=${path}`;
    // Warm up first: sockets, parsers and JIT belong to the baseline, not to the upload.
    expect((await upload(url('warm.bin'), adminKey, 4 * MiB)).status).toBeLessThan(300);
    const pid = broker.child.pid!;
    const baseline = rssOf(pid);
    const { result, peak } = await peakRssDuring(pid, upload(url('big.bin'), adminKey, UPLOAD_BYTES));
    expect(result.status).toBeLessThan(300);
    expect(JSON.parse(result.body)).toMatchObject({ size: UPLOAD_BYTES });
    process.stdout.write(`broker RSS growth over 500 MiB: ${((peak - baseline) / MiB).toFixed(1)} MiB\n`);
    expect(peak - baseline).toBeLessThan(MAX_GROWTH_BYTES);
    expect(await run('stat -c %s big.bin')).toBe(`${UPLOAD_BYTES}\n`);
  }, 300_000);

  it('carries 10 MB of shell output, in order, to a caller that reads slowly', async () => {
    const socket = new WebSocket(
      `${broker.url.replace(/^http/, 'ws')}/v1/sandboxes/${sandboxId}/sessions/new`,
    );
    await new Promise<void>((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    let text = '';
    let slowdowns = 0;
    const closed = new Promise<number>((resolve) => socket.on('close', (code: number) => resolve(code)));
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) return;
      const frame = JSON.parse(data.toString('utf8')) as { type: string; data?: string };
      if (frame.type === 'ready')
        // Numbered lines, so order and completeness can be checked; then the shell exits.
        socket.send(JSON.stringify({ type: 'stdin', data: 'seq -w 1 1250000; exit\n' }));
      if (frame.type === 'stdout') text += frame.data ?? '';
      // A slow reader: every 64th frame, stop reading for a turn of the event loop's timers.
      if (frame.type === 'stdout' && ++slowdowns % 64 === 0) {
        socket.pause();
        setTimeout(() => socket.resume(), 5);
      }
    });
    socket.send(JSON.stringify({ type: 'auth', token: adminKey }));
    socket.send(JSON.stringify({ type: 'start', cols: 200, rows: 50 }));
    expect(await closed).toBe(1000);
    // Terminal control sequences (bracketed paste on and off) aside, one number per line.
    const numbers = text
      .replaceAll(new RegExp(`${String.fromCodePoint(0x1b)}\\[[?0-9;]*[A-Za-z]`, 'g'), '')
      .split(/[\r\n]+/)
      .map((line) => line.trim())
      .filter((line) => /^\d{7}$/.test(line));
    expect(numbers.length).toBe(1_250_000);
    expect(numbers.every((line, i) => Number(line) === i + 1)).toBe(true);
    expect(text.length).toBeGreaterThan(SHELL_OUTPUT_BYTES);
  }, 300_000);
});
