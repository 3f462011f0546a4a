// The agent holds no more privilege than its sandbox (issue 26): with the broker running as
// root, nothing that serves a sandbox runs as root, and a sandbox process racing the file API
// with symlink swaps (the attack that once made a root agent chown any host file) changes
// nothing on the host. SBX_ATTACK_ROUNDS runs the race longer (scripts/attack-chown-race.sh).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { contractSpec } from './provider-contract.js';
import {
  environOf,
  newDataDirOutsideTmp,
  startLocalKit,
  tokenFor,
  type LocalKit,
} from './local-provider-kit.js';
import { exec, type Door, type ExecResult } from './sandbox-doors.js';

const asRoot = process.getuid?.() === 0 ? describe : describe.skip;
const ROUNDS = Number(process.env['SBX_ATTACK_ROUNDS'] ?? '5');
const PAIRS = 400;

/** Swaps each q/d<i> with q/l<i> (a symlink to /etc) for ever, as fast as it can. */
const SWAPPER = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  char a[64], b[64];
  for (;;)
    for (int i = 0; i < n; i++) {
      snprintf(a, sizeof a, "q/d%d", i);
      snprintf(b, sizeof b, "q/l%d", i);
      syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
    }
}`;

interface HostFile {
  readonly uid: number;
  readonly gid: number;
  readonly mode: number;
  readonly content: string;
}

function hostFile(file: string): HostFile {
  const stats = statSync(file);
  return { uid: stats.uid, gid: stats.gid, mode: stats.mode, content: readFileSync(file, 'utf8') };
}

/** Every process a sandbox's agent brought: the agent, its view's bwrap, the holder, slirp4netns. */
function processesServing(
  sandboxId: string,
  hostUid: number,
): { pid: number; uid: number; status: string }[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .flatMap((pid) => {
      const status = (() => {
        try {
          return readFileSync(`/proc/${pid}/status`, 'utf8');
        } catch {
          return '';
        }
      })();
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
      const ofSandbox = environOf(pid).includes(`SANDBOX_ID=${sandboxId}`) || uid === hostUid;
      return ofSandbox && status !== '' ? [{ pid, uid, status }] : [];
    });
}

async function startBackground(door: Door, cmd: string): Promise<void> {
  const response = await fetch(`${door.dataplane.httpBaseUrl}/v1/processes`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${tokenFor(door.spec, ['process'])}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ cmd }),
  });
  if (response.status !== 201)
    throw new Error(`processes answered ${response.status}: ${await response.text()}`);
}

/**
 * Fetch's own failure: no HTTP answer at all (the connection was refused, reset or closed
 * by an agent overloaded by hundreds of uploads on a loaded host). Not an answer of the API.
 */
function isTransportFailure(err: unknown): boolean {
  // Not `instanceof`: fetch's errors come from another realm than the test's globals.
  const { name, message } = (err ?? {}) as { name?: unknown; message?: unknown };
  return name === 'TypeError' && message === 'fetch failed';
}

/** An upload's HTTP status, or `no answer` when the transport failed before one came. */
async function upload(url: string, token: string): Promise<number | 'no answer'> {
  try {
    const response = await fetch(url, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}` },
      body: 'pwned',
    });
    // Read to the end, so that the connection serves the next request.
    await response.arrayBuffer().catch(() => undefined);
    return response.status;
  } catch (err) {
    if (isTransportFailure(err)) return 'no answer';
    throw err;
  }
}

/** `exec`, sent again (with backoff) when the transport failed: the commands here may run twice. */
async function execAgain(door: Door, cmd: string): Promise<ExecResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await exec(door, cmd);
    } catch (err) {
      if (!isTransportFailure(err) || attempt >= 5) throw err;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

asRoot('an agent with no more privilege than its sandbox (broker as root)', () => {
  let kit: LocalKit;
  let door: Door;
  const tag = randomBytes(6).toString('hex');
  const canary = `/etc/sbx-rt-canary-${tag}`;
  const created = `sbx-rt-new-${tag}`;

  beforeAll(async () => {
    writeFileSync(canary, `host secret ${tag}\n`, { mode: 0o600 });
    kit = await startLocalKit({ isolation: 'bubblewrap', dataDir: newDataDirOutsideTmp() });
    const spec = contractSpec({ network: 'on' });
    door = { spec, dataplane: (await kit.provider.create(spec)).dataplane };
  });

  afterAll(async () => {
    await kit.dispose();
    rmSync(canary, { force: true });
    rmSync(`/etc/${created}`, { recursive: true, force: true });
  });

  it('runs the agent, its view and everything it starts as the sandbox user, with no capability', async () => {
    const { hostUid } = JSON.parse(
      readFileSync(path.join(kit.dataDir, 'sandboxes', door.spec.sandboxId, 'sandbox.json'), 'utf8'),
    ) as { hostUid: number };
    await exec(door, 'sleep 30 >/dev/null 2>&1 &');
    const serving = processesServing(door.spec.sandboxId, hostUid);
    expect(serving.map((process) => process.uid)).toEqual(serving.map(() => hostUid));
    // The agent, the bwrap that built its view, the holder and its init, slirp4netns, the sleep.
    expect(serving.length).toBeGreaterThanOrEqual(5);
    for (const { status } of serving) {
      expect(status).toMatch(/^CapEff:\s+0+$/m);
      expect(status).toMatch(/^CapPrm:\s+0+$/m);
    }
  });

  it(
    `leaves a host file untouched and creates nothing on the host when uploads race symlink swaps (${ROUNDS} × ${PAIRS})`,
    async () => {
      const before = hostFile(canary);
      const setup = await exec(
        door,
        [
          `cat > /tmp/swap.c <<'EOF'\n${SWAPPER}\nEOF`,
          'gcc -O2 -o /tmp/swap /tmp/swap.c || exit 1',
          'mkdir -p q',
          `i=0; while [ $i -lt ${PAIRS} ]; do mkdir -p q/d$i; ln -sfn /etc q/l$i; i=$((i + 1)); done`,
          'echo ready',
        ].join('\n'),
      );
      expect(setup.stdout).toContain('ready');
      // Four swappers as background processes of the sandbox (an exec's children end with it).
      for (let n = 0; n < 4; n++) await startBackground(door, `exec /tmp/swap ${PAIRS}`);
      await until(async () => (await execAgain(door, 'pgrep -c -x swap')).stdout.trim() === '4');
      // The agent that serves the race: it must survive it (a crash would be restarted unseen).
      const agentBefore = kit.provider.agentPid(door.spec.sandboxId);
      expect(agentBefore).toBeDefined();
      const token = tokenFor(door.spec, ['fs:rw']);
      const statuses = new Map<number | 'no answer', number>();
      const answeredPerRound: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Each round creates the missing parents afresh: every upload races the swaps again.
        await execAgain(door, `rm -rf q/d*/${path.basename(canary)} q/d*/${created} 2>/dev/null; true`);
        const answers = await Promise.all(
          Array.from({ length: PAIRS }, (_, i) =>
            upload(
              `${door.dataplane.httpBaseUrl}/files/q/d${i}/${i % 2 === 0 ? path.basename(canary) : created}/x`,
              token,
            ),
          ),
        );
        for (const status of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1);
        answeredPerRound.push(answers.filter((status) => status !== 'no answer').length);
      }
      process.stdout.write(
        `answers to the racing uploads: ${JSON.stringify(Object.fromEntries(statuses))}\n`,
      );
      await execAgain(door, 'pkill -x swap; echo stopped');
      expect(hostFile(canary)).toEqual(before);
      expect(existsSync(`/etc/${created}`)).toBe(false);
      // The same agent served every round: none of the uploads crashed it.
      expect(kit.provider.agentPid(door.spec.sandboxId)).toBe(agentBefore);
      // Every round raced: the agent answered uploads in each while the swaps ran.
      expect(Math.min(...answeredPerRound)).toBeGreaterThan(0);
      // Every answer is the API's own (a write that landed, or a refusal), never a crash.
      const answered = [...statuses].filter(([status]) => status !== 'no answer');
      expect(Object.fromEntries(answered)).toEqual(
        Object.fromEntries(answered.filter(([status]) => typeof status === 'number' && status < 500)),
      );
    },
    300_000 + ROUNDS * 30_000,
  );
});
