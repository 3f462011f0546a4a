// What the agent tells a token holder's `/healthz` for the broker's usage accounting
// and the admin detail (docs/admin.md): counters since the agent started, named by a
// random boot id, and what runs now. Each feature keeps and reports its own part
// (exec: programs started and processes; files: bytes; shells: open shells); the
// handler merges them. The broker stores deltas: a new boot id means counters from 0.
import { randomUUID } from 'node:crypto';
import type { AgentProcess, AgentShell, AgentUsage } from '@sbx/protocol';

/** A feature's share of the report; absent fields add nothing. */
export interface FeatureReport {
  readonly processes?: readonly AgentProcess[];
  readonly shells?: readonly AgentShell[];
  readonly usage?: Partial<AgentUsage>;
}

/** The report's fields of the authenticated `/healthz` body. */
export interface AgentReport {
  readonly boot_id: string;
  readonly usage: AgentUsage;
  readonly activity: {
    readonly processes: readonly AgentProcess[];
    readonly shells: readonly AgentShell[];
  };
}

/** Longest `command` reported, in characters. */
export const COMMAND_TEXT_MAX = 200;

/** A new boot id: counters of another boot id are not comparable with these. */
export const newBootId = (): string => randomUUID();

/** A total that only grows, for the agent's lifetime. */
export class UsageCounter {
  #value = 0;

  add(amount: number): void {
    if (Number.isFinite(amount) && amount > 0) this.#value += amount;
  }

  get value(): number {
    return this.#value;
  }
}

/** What a process runs: `cmd` as given, or its argv joined by spaces; at most 200 characters. */
export function commandText(request: {
  readonly argv?: readonly string[] | undefined;
  readonly cmd?: string | undefined;
}): string {
  const text = request.cmd ?? (request.argv ?? []).join(' ');
  return text.length > COMMAND_TEXT_MAX ? text.slice(0, COMMAND_TEXT_MAX) : text;
}

/** Sums the features' counters and concatenates their lists. */
export function mergeReports(bootId: string, reports: readonly FeatureReport[]): AgentReport {
  const usage = { commands_run: 0, file_bytes_in: 0, file_bytes_out: 0 };
  const processes: AgentProcess[] = [];
  const shells: AgentShell[] = [];
  for (const report of reports) {
    usage.commands_run += report.usage?.commands_run ?? 0;
    usage.file_bytes_in += report.usage?.file_bytes_in ?? 0;
    usage.file_bytes_out += report.usage?.file_bytes_out ?? 0;
    processes.push(...(report.processes ?? []));
    shells.push(...(report.shells ?? []));
  }
  return { boot_id: bootId, usage, activity: { processes, shells } };
}
