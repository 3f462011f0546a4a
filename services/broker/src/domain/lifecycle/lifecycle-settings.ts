// The lifecycle's timers. Defaults follow docs/lifecycle.md; every one is a
// whole number of milliseconds, checked once when the reaper is built.
import { SbxError } from '@sbx/protocol';

export const DEFAULT_IDLE_TIMEOUT_MS = 900_000;
export const DEFAULT_HARD_TTL_MS = 8 * 3_600_000;
export const DEFAULT_PROVISIONING_TIMEOUT_MS = 120_000;
export const DEFAULT_FAILED_RETENTION_MS = 3_600_000;
export const DEFAULT_REAPER_INTERVAL_MS = 15_000;
export const DEFAULT_PROVIDER_TIMEOUT_MS = 60_000;

export interface LifecycleTimerOptions {
  /** What a heartbeat extends the lease by; the default for `suspendAfterIdleMs`. */
  readonly idleTimeoutMs?: number;
  /** How long an idle sandbox (lease run out) keeps running before it is suspended. */
  readonly suspendAfterIdleMs?: number;
  /** How long a sandbox may stay `provisioning` without a sign of life before it is failed. */
  readonly provisioningTimeoutMs?: number;
  /** How long a failed sandbox's workspace is kept (for inspection) before it is destroyed. */
  readonly failedRetentionMs?: number;
  /** Pause between reaper rounds. */
  readonly intervalMs?: number;
  /** Longest a provider stop or destroy may take before the reaper gives up on it for this round. */
  readonly providerTimeoutMs?: number;
  /** Sandboxes per pass and round (the rest wait for the next round). */
  readonly batchSize?: number;
  /** Sandboxes acted on at once within a pass. */
  readonly concurrency?: number;
}

export type LifecycleTimers = Required<LifecycleTimerOptions>;

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new SbxError('INTERNAL', `lifecycle ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

export function resolveLifecycleTimers(options: LifecycleTimerOptions = {}): LifecycleTimers {
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const providerTimeoutMs = options.providerTimeoutMs ?? DEFAULT_PROVIDER_TIMEOUT_MS;
  const timers: LifecycleTimers = {
    idleTimeoutMs,
    suspendAfterIdleMs: options.suspendAfterIdleMs ?? idleTimeoutMs,
    provisioningTimeoutMs: options.provisioningTimeoutMs ?? DEFAULT_PROVISIONING_TIMEOUT_MS,
    failedRetentionMs: options.failedRetentionMs ?? DEFAULT_FAILED_RETENTION_MS,
    intervalMs: options.intervalMs ?? DEFAULT_REAPER_INTERVAL_MS,
    providerTimeoutMs,
    batchSize: options.batchSize ?? 100,
    concurrency: options.concurrency ?? 4,
  };
  for (const [name, value] of Object.entries(timers)) positiveInteger(name, value);
  return timers;
}
