import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from '../lib/http-client.js';
import { atMost, durationNs, info, type Verdict } from '../lib/measure.js';
import { MIB, rssBytes, sampleRss } from '../lib/process-stats.js';
import { startAgentProcess, type AgentProcess } from './agent-process.js';

const UPLOAD_BYTES = 1024 * MIB;
const CHUNK = randomBytes(64 * 1024);

/** `bytes` of body generated as they are sent; one chunk reused, so this process holds none of it. */
function generatedBody(bytes: number): Readable {
  let left = bytes;
  return new Readable({
    read() {
      if (left <= 0) {
        this.push(null);
        return;
      }
      const chunk = left >= CHUNK.length ? CHUNK : CHUNK.subarray(0, left);
      left -= chunk.length;
      this.push(chunk);
    },
  });
}

async function put(agent: AgentProcess, name: string, bytes: number): Promise<void> {
  const reply = await request(`${agent.httpUrl}/files/${name}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.token}`, 'content-length': String(bytes) },
    body: generatedBody(bytes),
  });
  if (reply.status !== 201) throw new Error(`PUT ${name} answered ${reply.status}: ${reply.text}`);
  const size = statSync(path.join(agent.workspace, name)).size;
  if (size !== bytes) throw new Error(`PUT ${name} left ${size} bytes, not ${bytes}`);
}

async function remove(agent: AgentProcess, name: string): Promise<void> {
  const headers = { authorization: `Bearer ${agent.token}` };
  const reply = await request(`${agent.httpUrl}/files/${name}`, { method: 'DELETE', headers });
  if (reply.status !== 204 || existsSync(path.join(agent.workspace, name)))
    throw new Error(`DELETE ${name} answered ${reply.status}`);
}

/**
 * Agent RSS growth during a 1 GiB streamed `PUT /files/big.bin`: its VmRSS sampled every
 * 50 ms, peak minus the RSS just before (after a small warm-up upload, so code loaded on
 * first use is not counted). Target ≤ 64 MiB. The file is deleted afterwards.
 */
export async function benchUploadRss(): Promise<Verdict[]> {
  const agent = await startAgentProcess();
  try {
    await put(agent, 'warmup.bin', 8 * MIB);
    await remove(agent, 'warmup.bin');
    await sleep(1000);
    const before = rssBytes(agent.pid);
    const sampler = sampleRss(agent.pid, 50);
    let peak = before;
    let took: number;
    try {
      took = await durationNs(() => put(agent, 'big.bin', UPLOAD_BYTES));
    } finally {
      peak = sampler.stop().maxBytes;
    }
    await remove(agent, 'big.bin');
    return [
      info('upload: agent RSS before', before / MIB, 'MiB'),
      info('upload 1 GiB PUT throughput', UPLOAD_BYTES / MIB / (took / 1e9), 'MiB/s'),
      atMost('upload 1 GiB: agent RSS growth (peak − before)', (peak - before) / MIB, 'MiB', 64),
    ];
  } finally {
    await agent.stop();
  }
}
