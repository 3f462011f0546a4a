// Suspend and resume through a real broker: a clock the test can move so that the lease
// reaper (driven by `runOnce()`) finds a sandbox idle and then due for suspension, a
// session that reaches its agent directly, and the files of a workspace as hashes.
import { createHash } from 'node:crypto';
import { expect } from '@jest/globals';
import request from 'supertest';
import { ExecResponse, SessionResponse, type SandboxState } from '@sbx/protocol';
import type { SandboxProvider } from '../../src/providers/provider.js';
import { bearer } from '../support/broker-harness.js';
import type { BrokerFixture } from '../support/use-broker.js';

/** Far past a lease and its idle period (15 + 15 min by default), well within the 8 h hard TTL. */
const REAPER_LEAP_MS = 3 * 3_600_000;

/** The broker's clock: real time, but `leap()` lets the reaper see the future. */
export class LeapingClock {
  #offset = 0;
  readonly now = (): number => Date.now() + this.#offset;

  /** Runs `work` with the clock `ms` ahead; tokens minted outside it keep the agents' time. */
  async ahead<T>(ms: number, work: () => Promise<T>): Promise<T> {
    this.#offset = ms;
    try {
      return await work();
    } finally {
      this.#offset = 0;
    }
  }
}

export async function stateOf(broker: BrokerFixture<SandboxProvider>, id: string): Promise<SandboxState> {
  const row = await broker.database.prisma.sandbox.findUniqueOrThrow({ where: { id } });
  return row.state;
}

/** The lifecycle's own way: reaper rounds with the clock moved past the lease, until suspended. */
export async function suspendThroughReaper(
  broker: BrokerFixture<SandboxProvider>,
  clock: LeapingClock,
  id: string,
): Promise<void> {
  await clock.ahead(REAPER_LEAP_MS, async () => {
    // active → idle, then idle → suspended; a round skipped for a held lock is run again.
    for (let round = 0; round < 6 && (await stateOf(broker, id)) !== 'suspended'; round++)
      await broker.reaper.runOnce();
  });
  expect(await stateOf(broker, id)).toBe('suspended');
  expect(await broker.provider.status(id)).toBe('stopped');
}

/** A session on a new thread holding `fs:rw` and `process`, straight to the agent. */
export async function openSession(broker: BrokerFixture<SandboxProvider>, key: string, threadId: string) {
  const res = await request(broker.url)
    .post('/v1/sandbox/sessions')
    .set(bearer(key))
    .send({
      scope: { type: 'thread', id: threadId },
      mode: 'ensure',
      requested_capabilities: ['fs:rw', 'process'],
    });
  if (res.status !== 200) throw new Error(`ensure answered ${res.status}: ${JSON.stringify(res.body)}`);
  return SessionResponse.parse(res.body);
}

/** Where an agent is and the token it takes. */
export interface AgentAccess {
  readonly base: string;
  readonly token: string;
}

export async function execIn(agent: AgentAccess, script: string): Promise<ExecResponse> {
  const res = await fetch(`${agent.base}/v1/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ argv: ['sh', '-c', script], timeout_ms: 120_000 }),
  });
  if (res.status !== 200) throw new Error(`exec answered ${res.status}: ${await res.text()}`);
  const result = ExecResponse.parse(await res.json());
  if (result.exit_code !== 0) throw new Error(`exec exited ${result.exit_code}: ${result.stderr}`);
  return result;
}

export async function upload(agent: AgentAccess, path: string, body: Uint8Array): Promise<void> {
  const res = await fetch(`${agent.base}/v1/files/upload?path=${encodeURIComponent(path)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${agent.token}` },
    body,
  });
  if (res.status >= 300) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
}

async function getJson(agent: AgentAccess, path: string): Promise<unknown> {
  const res = await fetch(`${agent.base}${path}`, { headers: { authorization: `Bearer ${agent.token}` } });
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return res.json();
}

interface Listing {
  readonly entries: readonly { readonly name: string; readonly type: string; readonly mode: string }[];
}

/** Every entry under `dir` as the file API sees it: path → type, mode and (files) sha256. */
export async function hashesThroughFileApi(agent: AgentAccess, dir: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const listing = (await getJson(agent, `/v1/files/list?path=${encodeURIComponent(dir)}`)) as Listing;
  for (const entry of listing.entries) {
    const path = `${dir}/${entry.name}`;
    if (entry.type === 'file') {
      const res = await fetch(`${agent.base}/v1/files/download?path=${encodeURIComponent(path)}`, {
        headers: { authorization: `Bearer ${agent.token}` },
      });
      const sha = createHash('sha256')
        .update(Buffer.from(await res.arrayBuffer()))
        .digest('hex');
      found.set(path, `file ${entry.mode} ${sha}`);
    } else found.set(path, `${entry.type} ${entry.mode}`);
    if (entry.type === 'dir') for (const [p, v] of await hashesThroughFileApi(agent, path)) found.set(p, v);
  }
  return found;
}

/** The same tree as the sandbox's own tools see it: types, modes, link targets, file hashes. */
export async function hashesThroughExec(agent: AgentAccess, dir: string): Promise<string> {
  const result = await execIn(
    agent,
    `cd '${dir}' && export LC_ALL=C && find . -printf '%y %m %p -> %l\\n' | sort && ` +
      `find . -type f -exec sha256sum {} + | sort`,
  );
  return result.stdout;
}
