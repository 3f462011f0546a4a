import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { cpuMs, MIB } from '../lib/process-stats.js';
import { atLeast, durationNs, info, median, type Verdict } from '../lib/measure.js';
import { startAgentProcess } from './agent-process.js';
import { startFloorServer } from './floor-process.js';

export const FILE_MIB = 256;
export const FILE_BYTES = FILE_MIB * MIB;
const RUNS = 7;

/**
 * Incompressible content, written once and synced, so that write-back to disk does not
 * compete with the runs; the page cache then serves floor and agent alike.
 */
export function writeTestFile(file: string): void {
  const block = randomBytes(MIB);
  const fd = openSync(file, 'w');
  try {
    for (let i = 0; i < FILE_MIB; i++) writeSync(fd, block);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Sends `ask` on a new loopback connection and counts what arrives until the server
 * closes; the first bytes are kept to check an HTTP answer's status line and headers.
 */
function receiveAll(port: number, ask: string): Promise<{ bytes: number; head: string }> {
  return new Promise((resolve, reject) => {
    let bytes = 0;
    let head = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(ask));
    socket.on('data', (chunk: Buffer) => {
      if (head.length < 4096) head += chunk.toString('latin1', 0, Math.min(chunk.length, 4096));
      bytes += chunk.length;
    });
    socket.once('error', reject);
    socket.once('end', () => resolve({ bytes, head }));
  });
}

/** The floor: the file piped raw into a loopback socket by another process. */
async function rawStream(port: number, file: string): Promise<void> {
  const { bytes } = await receiveAll(port, `${file}\n`);
  if (bytes !== FILE_BYTES) throw new Error(`raw stream delivered ${bytes} bytes`);
}

/**
 * The subject, read by the same byte-counting client as the floor (an HTTP/1.1 request
 * written by hand, `Connection: close`), so the client's cost is alike on both sides.
 */
async function agentDownload(port: number, token: string): Promise<void> {
  const ask = `GET /files/download.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`;
  const { bytes, head } = await receiveAll(port, ask);
  const headLength = head.indexOf('\r\n\r\n') + 4;
  if (!head.startsWith('HTTP/1.1 200 ') || bytes - headLength !== FILE_BYTES)
    throw new Error(`download answered ${head.slice(0, 12)} with ${bytes - headLength} body bytes`);
}

/**
 * `GET /files/<file>` of a 256 MiB file, against the same file streamed raw to a socket.
 * Ratio = floor time / agent time (a throughput ratio), median of 7 alternating runs;
 * target ≥ 0.8×.
 */
export async function benchDownload(): Promise<Verdict[]> {
  const agent = await startAgentProcess();
  const floor = await startFloorServer();
  try {
    const file = path.join(agent.workspace, 'download.bin');
    writeTestFile(file);
    const port = Number(new URL(agent.httpUrl).port);
    for (let warmup = 0; warmup < 2; warmup++) {
      await rawStream(floor.tcpPort, file);
      await agentDownload(port, agent.token);
    }
    const raw: number[] = [];
    const served: number[] = [];
    // Server CPU per run: less sensitive than wall time to other load on the machine.
    let floorCpu = 0;
    let agentCpu = 0;
    for (let run = 0; run < RUNS; run++) {
      floorCpu -= cpuMs(floor.pid);
      raw.push(await durationNs(() => rawStream(floor.tcpPort, file)));
      floorCpu += cpuMs(floor.pid);
      agentCpu -= cpuMs(agent.pid);
      served.push(await durationNs(() => agentDownload(port, agent.token)));
      agentCpu += cpuMs(agent.pid);
    }
    const mibPerS = (ns: number): number => FILE_MIB / (ns / 1e9);
    return [
      info('download floor: raw file stream to socket', mibPerS(median(raw)), 'MiB/s', '(floor)'),
      info('download GET /files (256 MiB)', mibPerS(median(served)), 'MiB/s'),
      info('download floor server CPU per run', floorCpu / RUNS, 'ms'),
      info('download agent CPU per run', agentCpu / RUNS, 'ms'),
      atLeast('download throughput agent / floor', median(raw) / median(served), '×', 0.8),
    ];
  } finally {
    await floor.stop();
    await agent.stop();
  }
}
