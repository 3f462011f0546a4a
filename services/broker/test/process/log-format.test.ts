// What `pnpm start` prints around its banner: log lines a person reads on a terminal, JSON
// lines on a pipe or a file (log collectors), LOG_FORMAT=json|pretty to choose either way.
import { afterEach, describe, expect, it } from '@jest/globals';
import { ConfigError } from '@sbx/service-kit';
import { loadBrokerConfig } from '../../src/config.js';
import { startBroker, type BrokerRun } from './broker-run.js';

const SLOW = 180_000;
const BANNER = /^sbx broker \S+ listening on http:\/\/127\.0\.0\.1:\d+\r?$/m;
const PRETTY_LISTENING = /^\[[\d:.]+\] INFO \(broker\): broker listening\r?$/m;
const JSON_LISTENING = /"msg":"broker listening"/;

const runs: BrokerRun[] = [];
afterEach(async () => {
  await Promise.all(runs.splice(0).map((run) => run.stop()));
}, SLOW);

/** A broker up to its banner and its `broker listening` line (either format). */
async function started(on: 'pipe' | 'terminal', env: Record<string, string> = {}): Promise<BrokerRun> {
  const run = startBroker(on, env);
  runs.push(run);
  await run.waitFor(BANNER);
  await run.waitFor(/broker listening/);
  return run;
}

const logLines = (run: BrokerRun): string[] =>
  run
    .output()
    .split(/\r?\n/)
    .filter((line) => line.startsWith('{') || line.startsWith('['));

function expectJsonLines(run: BrokerRun): void {
  const lines = logLines(run);
  expect(lines.length).toBeGreaterThan(0);
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(records).toContainEqual(
    expect.objectContaining({ msg: 'broker listening', level: 30, name: 'broker' }),
  );
  expect(run.output()).not.toMatch(PRETTY_LISTENING);
}

function expectPrettyLines(run: BrokerRun): void {
  expect(run.output()).toMatch(PRETTY_LISTENING);
  expect(run.output()).not.toMatch(JSON_LISTENING);
  for (const line of logLines(run)) expect(() => JSON.parse(line)).toThrow(SyntaxError);
}

describe('pnpm start: log format', () => {
  it(
    'on a terminal: readable log lines, the banner, and the admin key in the banner only',
    async () => {
      const run = await started('terminal');
      // A terminal may hand the banner over in pieces: wait for the key's whole line.
      const keyLine = /admin API key \(shown once, store it now\): (\S+)\r?\n/;
      await run.waitFor(keyLine);
      expectPrettyLines(run);
      const key = keyLine.exec(run.output())?.[1];
      expect(key).toBeDefined();
      expect(run.output().split(key ?? '')).toHaveLength(2);
      expect(await run.stop()).toBe(0);
    },
    SLOW,
  );

  it(
    'on a pipe: JSON lines, and the banner',
    async () => {
      const run = await started('pipe');
      expectJsonLines(run);
      expect(await run.stop()).toBe(0);
    },
    SLOW,
  );

  it(
    'LOG_FORMAT=json on a terminal: JSON lines',
    async () => {
      const run = await started('terminal', { LOG_FORMAT: 'json' });
      expectJsonLines(run);
      expect(await run.stop()).toBe(0);
    },
    SLOW,
  );

  it(
    'LOG_FORMAT=pretty on a pipe: readable log lines',
    async () => {
      const run = await started('pipe', { LOG_FORMAT: 'pretty' });
      expectPrettyLines(run);
      expect(await run.stop()).toBe(0);
    },
    SLOW,
  );

  it('LOG_FORMAT is json, pretty or absent; anything else is refused by name', () => {
    expect(loadBrokerConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(loadBrokerConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadBrokerConfig({}).logFormat).toBeUndefined();
    expect(() => loadBrokerConfig({ LOG_FORMAT: 'yaml' })).toThrow(ConfigError);
    expect(() => loadBrokerConfig({ LOG_FORMAT: 'yaml' })).toThrow(/LOG_FORMAT/);
  });
});
