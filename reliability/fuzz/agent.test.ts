// Fuzz of the agent (reliability/README.md): generated malformed HTTP requests and WebSocket
// sessions against a real agent process (its entry point, services/agent/src/main.ts,
// configured by its environment), whose programs are made harmless (support/agent-surface.ts).
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AGENT_ISSUER,
  AGENT_SANDBOX_ID,
  agentKeys,
  agentSurface,
  agentWsSurface,
  METRICS_TOKEN,
} from './support/agent-surface.js';
import { inputs, SEED } from './support/fuzz-settings.js';
import { heapGrowthMiB } from './support/fuzz-run.js';
import { runHttpFuzz } from './support/http-run.js';
import { startAgentTarget, type Target } from './support/targets.js';
import { runWsFuzz } from './support/ws-run.js';

describe(`agent fuzz (seed ${SEED}; SBX_FUZZ_SEED=${SEED} replays it)`, () => {
  const keys = agentKeys();
  // The shells a session opens run `cat`: what the fuzz types into a PTY is echoed, never run.
  const shellDir = mkdtempSync(path.join(tmpdir(), 'sbx-fuzz-shell-'));
  const shell = path.join(shellDir, 'shell.sh');
  let target: Target;
  let url: string;

  beforeAll(async () => {
    writeFileSync(shell, '#!/bin/sh\nexec /bin/cat\n');
    chmodSync(shellDir, 0o755);
    chmodSync(shell, 0o755);
    target = await startAgentTarget({
      SANDBOX_ID: AGENT_SANDBOX_ID,
      SANDBOX_SIGNING_KEY: keys.key.toBase64url(),
      SANDBOX_TOKEN_ISSUER: AGENT_ISSUER,
      AGENT_METRICS_TOKEN: METRICS_TOKEN,
      AGENT_SHELL: shell,
      // Shells a refused session left behind end within a second instead of fifteen minutes.
      AGENT_SHELL_IDLE_GRACE_SECONDS: '1',
    });
    url = String(target.ready['url']);
  }, 180_000);

  afterAll(async () => {
    await target?.stop();
    rmSync(shellDir, { recursive: true, force: true });
  }, 60_000);

  it('answers generated HTTP requests with envelopes or documented successes, never a 5xx or a hang', async () => {
    const report = await runHttpFuzz('agent-http', target, url, agentSurface(keys), {
      count: inputs(4000),
      warmUp: inputs(800),
      concurrency: 16,
    });
    console.log(`agent HTTP: ${report.inputs} inputs in ${report.ms} ms: ${report.summary}`, report.memory);
    expect(heapGrowthMiB(report)).toBeLessThan(16);
    expect(report.failures).toEqual([]);
    expect(target.errors).toEqual([]);
    expect(target.alive()).toBe(true);
  }, 600_000);

  it('answers generated WebSocket sessions with error frames and policy closes, never 1011 or a hang', async () => {
    const report = await runWsFuzz('agent-ws', target, url.replace(/^http/, 'ws'), agentWsSurface(keys), {
      count: inputs(1500),
      warmUp: inputs(300),
      concurrency: 16,
    });
    console.log(`agent WS: ${report.inputs} inputs in ${report.ms} ms: ${report.summary}`, report.memory);
    expect(heapGrowthMiB(report)).toBeLessThan(16);
    expect(report.failures).toEqual([]);
    expect(target.errors).toEqual([]);
    expect(target.alive()).toBe(true);
  }, 600_000);
});
