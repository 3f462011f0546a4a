// The restart policy of crashed local agents (agent-restarts.ts), without agents: the
// first crash restarts at once on the old port, later ones after a doubling delay,
// `maxCrashes` within the window give up (once, with the workspace kept), crashes older
// than the window are forgotten, a failed restart is one more crash, a lost workspace
// gives up at once, and a cancelled restart never runs.
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createLogger } from '@sbx/service-kit';
import { SbxError } from '@sbx/protocol';
import { AgentRestarts, DEFAULT_RESTART_POLICY, portIsFree } from '../../src/providers/agent-restarts.js';
import type { AgentProcess } from '../../src/providers/agent-process.js';
import type { LiveAgent } from '../../src/providers/live-agent.js';
import type { AgentCrashReport, Dataplane } from '../../src/providers/provider.js';
import { sandboxPaths } from '../../src/providers/sandbox-layout.js';
import { SerialQueue } from '../../src/providers/serial-queue.js';
import { until } from '../support/until.js';

const logger = createLogger({ service: 'agent-restarts-test', level: 'silent' });
const KILLED = { code: null, signal: 'SIGKILL' as const };

function dataplaneAt(port: number): Dataplane {
  return {
    httpBaseUrl: `http://127.0.0.1:${port}`,
    wsBaseUrl: `ws://127.0.0.1:${port}`,
    workspacePath: '/workspace',
  };
}

interface Harness {
  readonly restarts: AgentRestarts;
  readonly reports: AgentCrashReport[];
  readonly restartCalls: (number | undefined)[];
  readonly failed: Set<string>;
  /** What the next restarts do, in order; the last one repeats. */
  outcomes: ('ok' | 'fail' | 'lost')[];
  clock: number;
  /** Another broker stopped or destroyed the sandbox (its ended mark). */
  endedElsewhere: boolean;
  live(port: number): LiveAgent;
}

function harness(policy: Partial<typeof DEFAULT_RESTART_POLICY> = {}): Harness {
  const reports: AgentCrashReport[] = [];
  const restartCalls: (number | undefined)[] = [];
  const failed = new Set<string>();
  const state: Harness = {
    reports,
    restartCalls,
    failed,
    outcomes: ['ok'],
    clock: 1_000_000,
    endedElsewhere: false,
    restarts: undefined as unknown as AgentRestarts,
    live: (port) => ({
      agent: {} as AgentProcess,
      // Nowhere: the sweep of a crashed agent finds no process working there.
      paths: sandboxPaths(`/nonexistent-${process.pid}`, 'sb_restart'),
      record: { sandboxId: 'sb_restart', tenantId: 't', tokenIssuer: 'i', network: 'off' },
      bearer: undefined,
      dataplane: dataplaneAt(port),
      expectedExit: false,
    }),
  };
  const restarts = new AgentRestarts({
    settings: {
      logger,
      cgroups: undefined,
      volumes: undefined,
      restartPolicy: { ...DEFAULT_RESTART_POLICY, backoffMs: 10, maxBackoffMs: 40, ...policy },
      onAgentExit: (_id, _code, _signal, report) => {
        if (report !== undefined) reports.push(report);
      },
    },
    queue: new SerialQueue(),
    restart: (_id, port) => {
      restartCalls.push(port);
      const outcome = state.outcomes.length > 1 ? state.outcomes.shift()! : state.outcomes[0]!;
      if (outcome === 'lost')
        return Promise.reject(new SbxError('SANDBOX_NOT_FOUND', 'its workspace is gone'));
      if (outcome === 'fail') return Promise.reject(new SbxError('PROVIDER_UNAVAILABLE', 'did not start'));
      return Promise.resolve(dataplaneAt(port ?? 1));
    },
    closing: () => false,
    endedElsewhere: () => Promise.resolve(state.endedElsewhere),
    markFailed: (id) => failed.add(id),
    now: () => state.clock,
  });
  (state as { restarts: AgentRestarts }).restarts = restarts;
  return state;
}

/** A port nothing listens at now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const kinds = (reports: readonly AgentCrashReport[]) =>
  reports.map((r) =>
    r.kind === 'restarting' ? `${r.kind} ${r.crashes} ${r.delayMs}` : `${r.kind} ${r.crashes}`,
  );

describe('agent restarts', () => {
  let taken: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => (taken === undefined ? resolve(undefined) : taken.close(resolve)));
    taken = undefined;
  });

  it('restarts at once, then after a doubling delay, on the port the agent had', async () => {
    const h = harness({ maxCrashes: 10 });
    const port = await freePort();
    for (let crash = 1; crash <= 4; crash++) {
      await h.restarts.crashed('sb_restart', h.live(port), KILLED);
      expect(h.restarts.pending('sb_restart')).toBe(true);
      await until(() => h.reports.length === crash * 2, `restart ${crash}`);
    }
    expect(kinds(h.reports)).toEqual([
      'restarting 1 0',
      'restarted 1',
      'restarting 2 10',
      'restarted 2',
      'restarting 3 20',
      'restarted 3',
      'restarting 4 40',
      'restarted 4',
    ]);
    expect(h.restartCalls).toEqual([port, port, port, port]);
    expect(h.restarts.pending('sb_restart')).toBe(false);
  });

  it('gives up once after maxCrashes within the window, and forgets crashes older than it', async () => {
    const h = harness({ maxCrashes: 3, windowMs: 60_000 });
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    await until(() => h.reports.length === 2, 'the first restart');
    h.clock += 61_000; // the first crash is out of the window now
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    await until(() => h.reports.length === 4, 'the second restart');
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    await until(() => h.reports.length === 6, 'the third restart');
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    expect(h.reports.at(-1)).toEqual({ kind: 'gave_up', crashes: 3, windowMs: 60_000 });
    expect(kinds(h.reports).slice(2)).toEqual([
      'restarting 1 0',
      'restarted 1',
      'restarting 2 10',
      'restarted 2',
      'gave_up 3',
    ]);
    expect(h.failed).toEqual(new Set(['sb_restart']));
    expect(h.restarts.pending('sb_restart')).toBe(false);
  });

  it('counts a failed restart as a crash, and gives up at once when the workspace is gone', async () => {
    const failing = harness({ maxCrashes: 3 });
    failing.outcomes = ['fail'];
    await failing.restarts.crashed('sb_restart', failing.live(1), KILLED);
    await until(() => failing.reports.some((r) => r.kind === 'gave_up'), 'giving up');
    expect(kinds(failing.reports)).toEqual(['restarting 1 0', 'restarting 2 10', 'gave_up 3']);
    expect(failing.reports.at(-1)).toMatchObject({ error: 'did not start' });

    const lost = harness();
    lost.outcomes = ['lost'];
    await lost.restarts.crashed('sb_restart', lost.live(1), KILLED);
    await until(() => lost.reports.length === 2, 'giving up');
    expect(lost.reports).toEqual([
      { kind: 'restarting', crashes: 1, delayMs: 0 },
      {
        kind: 'gave_up',
        crashes: 2,
        windowMs: DEFAULT_RESTART_POLICY.windowMs,
        error: 'its workspace is gone',
      },
    ]);
  });

  it('never runs a cancelled restart', async () => {
    const h = harness({ backoffMs: 60_000, maxBackoffMs: 60_000, maxCrashes: 10 });
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    await until(() => h.reports.length === 2, 'the first restart');
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    expect(h.restarts.cancelAll()).toEqual(['sb_restart']);
    expect(h.restarts.pending('sb_restart')).toBe(false);
    expect(h.restartCalls).toHaveLength(1);
  });

  it('takes a new port when the old one is taken meanwhile', async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken!.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    expect(await portIsFree(port)).toBe(false);
    const h = harness();
    await h.restarts.crashed('sb_restart', h.live(port), KILLED);
    await until(() => h.reports.length === 2, 'the restart');
    expect(h.restartCalls).toEqual([undefined]);
  });

  it('restarts nothing another broker stopped or destroyed, before or during the backoff', async () => {
    const h = harness({ backoffMs: 50, maxBackoffMs: 50, maxCrashes: 10 });
    h.endedElsewhere = true;
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    expect({ pending: h.restarts.pending('sb_restart'), reports: h.reports }).toEqual({
      pending: false,
      reports: [],
    });

    h.endedElsewhere = false;
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    await until(() => h.reports.length === 2, 'the first restart');
    await h.restarts.crashed('sb_restart', h.live(1), KILLED);
    h.endedElsewhere = true; // ended while the second restart waits for its delay
    await until(() => !h.restarts.pending('sb_restart'), 'the waiting restart dropped');
    expect({ calls: h.restartCalls.length, reports: kinds(h.reports) }).toEqual({
      calls: 1,
      reports: ['restarting 1 0', 'restarted 1', 'restarting 2 50'],
    });
  });
});
