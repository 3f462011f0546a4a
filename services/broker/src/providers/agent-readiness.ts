import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { Dataplane } from './provider.js';

/** The agent's JSON log line announcing where it listens (it picks a free port itself). */
const ListeningLine = z.object({ msg: z.literal('agent listening'), url: z.url({ protocol: /^http$/ }) });

const Health = z.object({ sandbox_id: z.string() });

const POLL_INTERVAL_MS = 20;

/** The URL of an `agent listening` line; undefined for every other line. */
export function listeningUrlOf(line: string): string | undefined {
  if (!line.startsWith('{') || !line.includes('agent listening')) return undefined;
  try {
    const parsed = ListeningLine.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data.url.replace(/\/+$/, '') : undefined;
  } catch {
    return undefined;
  }
}

export function dataplaneOf(httpBaseUrl: string): Dataplane {
  const url = new URL(httpBaseUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return { httpBaseUrl, wsBaseUrl: url.href.replace(/\/+$/, '') };
}

/** True when `/healthz` answers 200 for this sandbox (not some other process that took the port). */
export async function isHealthy(httpBaseUrl: string, sandboxId: string, timeoutMs: number): Promise<boolean> {
  try {
    const response = await fetch(`${httpBaseUrl}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    if (response.status !== 200) return false;
    const body = Health.safeParse(await response.json());
    return body.success && body.data.sandbox_id === sandboxId;
  } catch {
    return false;
  }
}

/** Polls `/healthz` until it answers, the deadline passes or `gaveUp()` says the agent is gone. */
export async function waitUntilHealthy(
  httpBaseUrl: string,
  sandboxId: string,
  deadline: number,
  gaveUp: () => boolean,
): Promise<void> {
  for (;;) {
    const remaining = deadline - Date.now();
    if (gaveUp()) throw new Error('agent exited before its health check passed');
    if (remaining <= 0) throw new Error(`agent at ${httpBaseUrl} did not pass its health check in time`);
    if (await isHealthy(httpBaseUrl, sandboxId, Math.max(50, Math.min(remaining, 1000)))) return;
    await sleep(POLL_INTERVAL_MS);
  }
}

/** `promise`, or a rejection once `deadline` (epoch ms) passes. */
export async function beforeDeadline<T>(promise: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took too long`)), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
