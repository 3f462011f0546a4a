import { randomInt } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { TestAgent } from '../support/agent-harness.js';

export interface JsonResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

/** Calls the agent's HTTP API with a bearer token (none when `token` is undefined). */
export async function call(
  agent: TestAgent,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<JsonResponse> {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${agent.httpUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/** A `sleep` duration nobody else uses, so its processes can be found in /proc. */
export function uniqueSleep(): string {
  return `${900 + randomInt(99)}.${randomInt(1_000_000, 9_999_999)}`;
}

/** Pids of live processes whose command line (arguments joined by spaces) contains `marker`, or is exactly it. */
export function pidsWith(marker: string, match: 'contains' | 'exact' = 'contains'): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      const state = /^State:\s+(\w)/m.exec(readFileSync(`/proc/${name}/status`, 'utf8'))?.[1];
      const matches = match === 'exact' ? cmdline === marker : cmdline.includes(marker);
      if (matches && state !== 'Z') pids.push(Number(name));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** Polls `probe` until it gives a value other than undefined/false. */
export async function waitFor<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export function decode(data: unknown, encoding: unknown): Buffer {
  if (typeof data !== 'string') throw new Error(`no data in ${JSON.stringify(data)}`);
  return Buffer.from(data, encoding === 'base64' ? 'base64' : 'utf8');
}
