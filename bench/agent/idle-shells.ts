import { setTimeout as sleep } from 'node:timers/promises';
import { info, median, type Verdict } from '../lib/measure.js';
import { descendantsOf, KIB, pssBytes, rssBytes } from '../lib/process-stats.js';
import { startAgentProcess } from './agent-process.js';
import { ShellSocket } from './shell-socket.js';

const SHELLS = 200;
const OPEN_AT_ONCE = 10;
const SETTLE_MS = 2000;

/** RSS once the agent has settled: the median of samples over a second, to smooth out GC. */
async function settledRss(pid: number): Promise<number> {
  await sleep(SETTLE_MS);
  const samples: number[] = [];
  for (let i = 0; i < 10; i++) {
    samples.push(rssBytes(pid));
    await sleep(100);
  }
  return median(samples);
}

/** Memory of the agent's child processes (the shells, and anything else it runs). */
function childrenPss(pid: number): number {
  return descendantsOf(pid).reduce((sum, child) => sum + pssBytes(child), 0);
}

async function openShells(wsUrl: string, token: string, count: number): Promise<ShellSocket[]> {
  const shells: ShellSocket[] = [];
  while (shells.length < count) {
    const batch = Math.min(OPEN_AT_ONCE, count - shells.length);
    shells.push(...(await Promise.all(Array.from({ length: batch }, () => ShellSocket.start(wsUrl, token)))));
  }
  return shells;
}

async function endShells(shells: readonly ShellSocket[]): Promise<void> {
  for (let i = 0; i < shells.length; i += OPEN_AT_ONCE)
    await Promise.all(shells.slice(i, i + OPEN_AT_ONCE).map((shell) => shell.end()));
}

/**
 * Agent RSS per idle shell with 200 shells open over WebSockets (each authenticated,
 * started and ready): (RSS after − RSS before) / 200. The shells' own processes are not
 * part of the agent's RSS; their proportional memory is reported beside it. No target.
 */
export async function benchIdleShells(): Promise<Verdict[]> {
  const agent = await startAgentProcess({ AGENT_MAX_SHELLS: String(SHELLS + 56) });
  const shells: ShellSocket[] = [];
  try {
    // One shell first, so code loaded on first use is not charged to the 200.
    await endShells(await openShells(agent.wsUrl, agent.token, 1));
    const before = await settledRss(agent.pid);
    const childrenBefore = childrenPss(agent.pid);
    shells.push(...(await openShells(agent.wsUrl, agent.token, SHELLS)));
    const after = await settledRss(agent.pid);
    const childrenAfter = childrenPss(agent.pid);
    return [
      info('shells: agent RSS before', before / KIB / KIB, 'MiB'),
      info(`shells: agent RSS with ${SHELLS} idle shells`, after / KIB / KIB, 'MiB'),
      info('shells: agent RSS per idle shell', (after - before) / SHELLS / KIB, 'KiB'),
      info(
        'shells: shell processes PSS per shell (not agent RSS)',
        (childrenAfter - childrenBefore) / SHELLS / KIB,
        'KiB',
      ),
    ];
  } finally {
    await endShells(shells);
    await agent.stop();
  }
}
