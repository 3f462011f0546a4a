/**
 * Closed-loop load: N clients, each on its own kept-alive connection, each sending its next
 * request as soon as the previous one answered. Latency is then per request and
 * throughput is what the server sustains at that concurrency (no open-loop queueing).
 */
import type { Agent } from 'node:http';
import { keepAliveAgent } from './http-client.js';

export type ClientOp = (agent: Agent) => Promise<void>;

export interface LoadRun {
  /** Latencies (ns) of the requests that started and ended inside the measured window. */
  readonly latenciesNs: number[];
  /** Length of the measured window(s), ns. */
  readonly windowNs: number;
  /** Every request sent, warm-up included (to share out CPU time). */
  readonly sent: number;
  readonly errors: number;
  readonly firstError: string | undefined;
}

export interface LoopTiming {
  readonly warmupMs: number;
  readonly durationMs: number;
}

const now = (): bigint => process.hrtime.bigint();
const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** `clients` loops of `op` for warm-up + duration; only the duration is measured. */
export async function closedLoop(clients: number, timing: LoopTiming, op: ClientOp): Promise<LoadRun> {
  const started = now();
  const windowStart = started + BigInt(timing.warmupMs) * 1_000_000n;
  const windowEnd = windowStart + BigInt(timing.durationMs) * 1_000_000n;
  const latenciesNs: number[] = [];
  let sent = 0;
  let errors = 0;
  let firstError: string | undefined;
  const client = async (): Promise<void> => {
    const agent = keepAliveAgent();
    try {
      for (let at = now(); at < windowEnd; at = now()) {
        sent += 1;
        try {
          await op(agent);
        } catch (err) {
          errors += 1;
          firstError ??= messageOf(err);
          continue;
        }
        const done = now();
        if (at >= windowStart && done <= windowEnd) latenciesNs.push(Number(done - at));
      }
    } finally {
      agent.destroy();
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return { latenciesNs, windowNs: Number(windowEnd - windowStart), sent, errors, firstError };
}

/** Several runs of the same load as one (rounds alternated with another subject). */
export function mergeRuns(runs: readonly LoadRun[]): LoadRun {
  return {
    latenciesNs: runs.flatMap((run) => run.latenciesNs),
    windowNs: runs.reduce((sum, run) => sum + run.windowNs, 0),
    sent: runs.reduce((sum, run) => sum + run.sent, 0),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    firstError: runs.find((run) => run.firstError !== undefined)?.firstError,
  };
}

/** Requests per second completed inside the measured window. */
export function throughputPerSecond(run: LoadRun): number {
  return run.windowNs === 0 ? Number.NaN : (run.latenciesNs.length * 1e9) / run.windowNs;
}

export interface CountedRun {
  readonly latenciesNs: number[];
  /** From the first request sent to the last answer. */
  readonly wallNs: number;
  readonly errors: number;
  readonly firstError: string | undefined;
}

/** `clients` loops sharing `total` operations (each gets the next index), for costly ones. */
export async function countedLoop(
  clients: number,
  total: number,
  op: (index: number, agent: Agent) => Promise<void>,
): Promise<CountedRun> {
  const latenciesNs: number[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const client = async (): Promise<void> => {
    const agent = keepAliveAgent();
    try {
      for (let index = next++; index < total; index = next++) {
        const at = now();
        try {
          await op(index, agent);
          latenciesNs.push(Number(now() - at));
        } catch (err) {
          errors += 1;
          firstError ??= messageOf(err);
        }
      }
    } finally {
      agent.destroy();
    }
  };
  const started = now();
  await Promise.all(Array.from({ length: Math.min(clients, total) }, client));
  return { latenciesNs, wallNs: Number(now() - started), errors, firstError };
}
