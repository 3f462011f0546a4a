import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * The URL of an agent started as a process, from its `agent listening` log line; every
 * stdout line also goes to `lines`. Rejects after `timeoutMs` with what it printed.
 */
export function agentListening(
  child: ChildProcess,
  lines: string[] = [],
  timeoutMs = 20_000,
): Promise<string> {
  const input = child.stdout;
  if (input === null) return Promise.reject(new Error('the agent has no stdout pipe'));
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`agent did not start: ${lines.join('')}`)), timeoutMs);
    createInterface({ input }).on('line', (line) => {
      lines.push(line);
      const record = JSON.parse(line) as { msg?: string; url?: string };
      if (record.msg === 'agent listening' && record.url !== undefined) {
        clearTimeout(timer);
        resolve(record.url);
      }
    });
  });
}
