// Postgres restarts under load (the suite's own server: `pg_ctl stop -m fast`, or
// `immediate` as a crash in the long form, then start). While it is down every answer is
// a 200 or a 503 `BACKEND_UNAVAILABLE` with `retryable: true`: never a 500, never a stack
// trace or a file path. Once it is back the broker serves again within 5 s, without a
// restart. Long form: more restarts, both stop modes, longer outages.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { until } from '../../services/broker/test/support/until.js';
import type { BrokerProcess } from '../../services/broker/test/process/broker-process.js';
import { field, LONG, text, useDeployment, type Answer, type Deployment } from './fault-kit.js';

const WORKERS = 6;
const RESTARTS: readonly ('fast' | 'immediate')[] = LONG
  ? ['fast', 'immediate', 'fast', 'immediate', 'fast']
  : ['fast'];
/** Answers to collect while the database is down before it is started again. */
const ANSWERS_WHILE_DOWN = LONG ? 200 : 40;
const BACK_WITHIN_MS = 5_000;
/** New sandboxes the load makes, besides its two (the owner's share is 5). */
const MAX_NEW = 3;

interface Timed extends Answer {
  readonly kind: string;
  readonly startedAt: number;
  readonly endedAt: number;
}

/** Stack frames, source paths or an exception's name: what no answer may carry. */
const LEAKS = /\n\s+at |\.ts:\d+|\.js:\d+|node_modules|PrismaClient|Error: /;

describe('a broker while its Postgres restarts under load', () => {
  const deployment = useDeployment({ redis: false, replicas: 1 });

  it('answers 503 retryable while Postgres is down, and serves within 5 s of its return', async () => {
    const d = deployment();
    const broker = d.brokers[0]!;
    const threads = [0, 1].map((i) => `thr_pg_${i}_${randomBytes(3).toString('hex')}`);
    const sessions: string[] = [];
    for (const thread of threads) {
      const res = await d.call(broker, 'POST', '/v1/sandbox/sessions', { thread_id: thread, mode: 'ensure' });
      expect(res.status).toBe(200);
      sessions.push(text(res, 'session_id'));
    }
    const kinds = requestKinds(d, broker, threads, sessions);

    const answers: Timed[] = [];
    const control = { stopping: false };
    const worker = async (n: number): Promise<void> => {
      for (let i = n; !control.stopping; i += 1) {
        const [kind, send] = kinds[i % kinds.length]!;
        const startedAt = performance.now();
        const answer = await send().catch((err: unknown) => {
          throw new Error(`${kind}: the connection failed (${String(err)})`);
        });
        answers.push({ ...answer, kind, startedAt, endedAt: performance.now() });
      }
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, n) => worker(n)));
    try {
      for (const mode of RESTARTS) {
        const stoppedAt = answers.length;
        await until(() => answers.length >= stoppedAt + 10, 'answers before the restart');
        await d.postgres.stop(mode);
        const downFrom = answers.length;
        await until(() => answers.length >= downFrom + ANSWERS_WHILE_DOWN, 'answers while Postgres is down');
        await d.postgres.start();
        const backAt = performance.now();
        // Serving again: a full round of every kind of request answered 200, started after the return.
        await until(
          () => everyKindOkSince(answers, kinds.length, backAt),
          'every request kind to succeed again',
        );
        const down = answers.slice(downFrom).filter((a) => a.startedAt < backAt);
        expect(down.filter((a) => a.status === 503).length).toBeGreaterThan(0);
        const servedAt = firstFullRoundOk(answers, kinds.length, backAt);
        expect(servedAt - backAt).toBeLessThan(BACK_WITHIN_MS);
        // Whatever started 5 s after the return is served.
        await until(() => answers.some((a) => a.startedAt > backAt + BACK_WITHIN_MS), 'answers 5 s after');
        const late = answers.filter((a) => a.startedAt > backAt + BACK_WITHIN_MS);
        expect(late.filter((a) => a.status !== 200).map((a) => `${a.kind} ${a.status}`)).toEqual([]);
      }
    } finally {
      control.stopping = true;
      await load;
    }
    for (const answer of answers) {
      expect({ kind: answer.kind, status: answer.status }).toEqual({
        kind: answer.kind,
        status: answer.status === 503 ? 503 : 200,
      });
      const refusal =
        answer.status === 503
          ? { code: field(answer.body, 'error', 'code'), retryable: field(answer.body, 'error', 'retryable') }
          : null;
      expect(refusal).toEqual(
        answer.status === 503 ? { code: 'BACKEND_UNAVAILABLE', retryable: true } : null,
      );
      expect(LEAKS.test(answer.text)).toBe(false);
    }
  });
});

type Send = () => Promise<Answer>;

/** What holders and operators keep sending: reads, writes, negotiations, a new sandbox now and then. */
function requestKinds(
  d: Deployment,
  broker: BrokerProcess,
  threads: readonly string[],
  sessions: readonly string[],
): [string, Send][] {
  let fresh = 0;
  let made = 0;
  return [
    [
      'ensure',
      () => d.call(broker, 'POST', '/v1/sandbox/sessions', { thread_id: threads[0], mode: 'ensure' }),
    ],
    ['get', () => d.call(broker, 'GET', `/v1/sandbox/sessions/${sessions[0]}`)],
    ['heartbeat', () => d.call(broker, 'POST', `/v1/sandbox/sessions/${sessions[1]}/heartbeat`, {})],
    ['refresh', () => d.call(broker, 'POST', `/v1/sandbox/sessions/${sessions[1]}/refresh-token`, {})],
    ['admin list', () => d.call(broker, 'GET', '/admin/sandboxes')],
    ['whoami', () => d.call(broker, 'GET', '/v1/whoami')],
    [
      'new thread',
      () => {
        fresh += 1;
        // Sparingly (each is a new agent), and within the owner's share of sandboxes: one
        // cut short by the outage stays `provisioning` until the reaper's timeout.
        const isNew = fresh % 8 === 0 && made < MAX_NEW;
        if (isNew) made += 1;
        const thread = isNew ? `thr_pg_new_${fresh}` : threads[1];
        return d.call(broker, 'POST', '/v1/sandbox/sessions', { thread_id: thread, mode: 'ensure' });
      },
    ],
  ];
}

/** When every kind had answered 200 to a request started after `since`; Infinity when not yet. */
function firstFullRoundOk(answers: readonly Timed[], kinds: number, since: number): number {
  const seen = new Map<string, number>();
  for (const answer of answers) {
    if (answer.startedAt < since || answer.status !== 200 || seen.has(answer.kind)) continue;
    seen.set(answer.kind, answer.endedAt);
    if (seen.size === kinds) return Math.max(...seen.values());
  }
  return Infinity;
}

function everyKindOkSince(answers: readonly Timed[], kinds: number, since: number): boolean {
  return firstFullRoundOk(answers, kinds, since) !== Infinity;
}
