import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { mintCapabilityToken, type SigningKey } from '@sbx/tokens';
import { getAgentJson } from './agent-get.js';
import type { Dataplane } from './provider.js';

/** The agent's JSON log line announcing where it listens (it picks a free port itself). */
const ListeningLine = z.object({ msg: z.literal('agent listening'), url: z.url({ protocol: /^http$/ }) });

const Health = z.object({ sandbox_id: z.string() });

const POLL_INTERVAL_MS = 20;

/** What the agent logs as `sub` for the broker's health probes. */
const READINESS_SUBJECT = 'sbx-broker:readiness';
const READINESS_TOKEN_TTL_SECONDS = 60;

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

export function dataplaneOf(httpBaseUrl: string, workspacePath: string): Dataplane {
  const url = new URL(httpBaseUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return { httpBaseUrl, wsBaseUrl: url.href.replace(/\/+$/, ''), workspacePath };
}

/**
 * True when `/healthz` answers 200 for this sandbox (not some other process that took the port).
 * The agent names its sandbox only to a caller holding a token for it, so `bearer()` is sent;
 * an agent of another sandbox refuses that token with 401, which is just as unhealthy.
 */
export async function isHealthy(
  httpBaseUrl: string,
  sandboxId: string,
  timeoutMs: number,
  bearer: () => string,
): Promise<boolean> {
  // Outside the try: a token that cannot be minted is a broker fault, not an unhealthy agent.
  const authorization = `Bearer ${bearer()}`;
  try {
    const answer = await getAgentJson(`${httpBaseUrl}/healthz`, { authorization }, timeoutMs);
    if (answer.status !== 200) return false;
    const body = Health.safeParse(answer.body);
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
  bearer: () => string,
): Promise<void> {
  for (;;) {
    const remaining = deadline - Date.now();
    if (gaveUp()) throw new Error('agent exited before its health check passed');
    if (remaining <= 0) throw new Error(`agent at ${httpBaseUrl} did not pass its health check in time`);
    if (await isHealthy(httpBaseUrl, sandboxId, Math.max(50, Math.min(remaining, 1000)), bearer)) return;
    await sleep(POLL_INTERVAL_MS);
  }
}

/**
 * A token for the broker's own `/healthz` probe: never handed out, so short-lived and
 * with the least a token can grant (`shell:ro` only observes a shell whose id one already
 * knows; every other scope reads files or runs code). One HMAC: a caller can mint one per
 * probe, so a long wait never sends an expired token.
 */
export function readinessToken(signingKey: SigningKey, sandboxId: string, issuer: string): string {
  return mintCapabilityToken({
    key: signingKey,
    issuer,
    subject: READINESS_SUBJECT,
    sandboxId,
    scopes: ['shell:ro'],
    ttlSeconds: READINESS_TOKEN_TTL_SECONDS,
  }).token;
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
