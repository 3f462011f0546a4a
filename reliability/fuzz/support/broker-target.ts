// The broker the fuzz suite attacks, in a process of its own (started by targets.ts, with
// memory-probe.ts preloaded): the broker's assembly over a real Postgres database (migrated
// by the test, URL in argv[2]) and a FakeProvider, on 127.0.0.1:0, as in the broker's own
// tests (services/broker/test/support/broker-harness.ts). Rate and failed-auth limits are
// lifted so that every input reaches the code behind them. It prints one line,
// `{"fuzz_ready":{url, keys, ids}}`, then forwards only its error log lines
// (`{"fuzz_log":…}`) to standard error; SIGTERM closes it.
import {
  ALL_CALLER_SCOPES,
  startBrokerHarness,
} from '../../../services/broker/test/support/broker-harness.js';
import { agentExitRelay } from '../../../services/broker/src/broker-adapters.js';
import { FakeProvider } from '../../../services/broker/src/providers/fake-provider.js';
import { openDatabase } from '../../../services/broker/src/store/database.js';

const databaseUrl = process.argv[2];
if (databaseUrl === undefined) throw new Error('usage: broker-target.ts <database url>');

const database = await openDatabase({ databaseUrl, migrate: false });
const agentExits = agentExitRelay();
const provider = new FakeProvider({ onAgentExit: agentExits.listener });
const broker = await startBrokerHarness({
  database,
  provider,
  agentExits,
  rateLimits: { perWindow: { negotiate: 1e9, session: 1e9 } },
  authFailures: { maxFailures: 1e9, windowMs: 60_000 },
  logLevel: 'info',
});

// Kept lines would grow with every input: only errors (pino level ≥ 50) leave, at once.
broker.logs.push = (...lines: string[]): number => {
  for (const line of lines) {
    const level = (JSON.parse(line) as { level?: number }).level ?? 0;
    if (level >= 50) process.stderr.write(`${JSON.stringify({ fuzz_log: line })}\n`);
  }
  return 0;
};

const keys = {
  admin: await broker.apiKey({ scopes: ALL_CALLER_SCOPES }),
  user: await broker.apiKey({ scopes: ['read:sandbox', 'write:sandbox', 'exec:sandbox'] }),
  reader: await broker.apiKey({ scopes: ['read:sandbox'] }),
};

/** Every `…id` string of an answer: real ids for the generator's path parameters. */
function idsIn(value: unknown, into: Set<string>): Set<string> {
  if (typeof value !== 'object' || value === null) return into;
  for (const [name, field] of Object.entries(value)) {
    if (typeof field === 'string' && /(^|_)id$/.test(name)) into.add(field);
    else idsIn(field, into);
  }
  return into;
}

const ids = new Set<string>(['fuzz-thread']);
const seed = async (path: string, body: unknown): Promise<void> => {
  const res = await fetch(`${broker.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keys.user}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`seeding ${path}: ${res.status} ${await res.text()}`);
  idsIn(await res.json(), ids);
};
await seed('/v1/sandbox/sessions', { mode: 'ensure', thread_id: 'fuzz-thread' });
await seed('/threads/fuzz-thread/sandbox', { scopes: ['fs:ro'] });

process.stdout.write(`${JSON.stringify({ fuzz_ready: { url: broker.url, keys, ids: [...ids] } })}\n`);

process.once('SIGTERM', () => {
  void (async () => {
    await broker.close();
    await provider.close();
    await database.close();
    process.exit(0);
  })();
});
