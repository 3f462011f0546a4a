// A real broker (test harness over Postgres, or PGlite) with the real local provider, so every
// session gets a real sandbox agent: the client package's helper, reused as is.
import { BrokerClient } from '@sbx/client';
import { startRealBroker, type RealBroker } from '../../client/test/support.js';

export interface TestBroker {
  readonly real: RealBroker;
  readonly broker: BrokerClient;
  readonly url: string;
  readonly apiKey: string;
  close(): Promise<void>;
}

export async function startTestBroker(): Promise<TestBroker> {
  const real = await startRealBroker();
  const broker = new BrokerClient({ baseUrl: real.harness.url, apiKey: real.apiKey });
  return { real, broker, url: real.harness.url, apiKey: real.apiKey, close: () => real.close() };
}

/** A broker address nothing listens on: a call there fails, so a test can prove none is made. */
export const DEAD_BROKER = {
  baseUrl: 'http://127.0.0.1:9',
  apiKey: 'sbk_unused',
  retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
} as const;

/** What a shell printed, and a wait for a pattern in it (an event, not a fixed sleep). */
export function recordShell(shell: { onData(listener: (chunk: Buffer) => void): unknown }): {
  text: () => string;
  until: (pattern: RegExp, timeoutMs?: number) => Promise<void>;
} {
  let text = '';
  const waiters = new Set<() => void>();
  shell.onData((chunk) => {
    text += chunk.toString('utf8');
    for (const check of waiters) check();
  });
  const until = (pattern: RegExp, timeoutMs = 30_000): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (!pattern.test(text)) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no ${String(pattern)} in the shell; it ends with:\n${text.slice(-500)}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  return { text: () => text, until };
}
