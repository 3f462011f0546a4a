// Waiting for a started container's agent: the shared readiness poll, given up early when the
// engine says the container is no longer running.
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import { waitUntilHealthy } from '../agent-readiness.js';
import { engine, isNotFound } from './docker-engine.js';
import type { DockerSettings } from './docker-settings.js';
import { agentUrlOf } from './docker-state.js';

const EXIT_CHECK_INTERVAL_MS = 500;

/** Sets `exited` once the engine reports the container stopped or gone; engine hiccups are no exit. */
async function watchExit(container: Docker.Container, signal: AbortSignal, state: { exited: boolean }) {
  while (!signal.aborted) {
    try {
      await sleep(EXIT_CHECK_INTERVAL_MS, undefined, { signal });
      state.exited = !(await container.inspect()).State.Running;
    } catch (err) {
      if (isNotFound(err)) state.exited = true;
    }
    if (state.exited) return;
  }
}

/** The agent's base URL once `/healthz` answers for this sandbox; throws when it never does. */
export async function waitForAgent(
  container: Docker.Container,
  sandboxId: string,
  settings: DockerSettings,
  bearer: () => string,
  closing: () => boolean,
): Promise<string> {
  const deadline = Date.now() + settings.startTimeoutMs;
  const info = await engine(`inspect the container of sandbox ${sandboxId}`, () => container.inspect());
  const url = agentUrlOf(info, settings);
  if (url === undefined) throw new Error('the engine gave the container no address the broker can reach');
  const stopWatching = new AbortController();
  const state = { exited: !info.State.Running };
  const watcher = watchExit(container, stopWatching.signal, state);
  try {
    await waitUntilHealthy(url, sandboxId, deadline, () => state.exited || closing(), bearer);
    return url;
  } finally {
    stopWatching.abort();
    await watcher;
  }
}
