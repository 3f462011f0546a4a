import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SigningKey } from '@sbx/tokens';
import type { AgentCommand } from '../../src/providers/agent-process.js';
import { prepareAgentBundle } from '../../src/providers/agent-bundle.js';
import { asAgentUser, isAlive, newDataDir } from './local-provider-kit.js';

let dataDir: string;
let command: AgentCommand;
const bundleFile = (): string => path.join(dataDir, 'agent-bundle', 'agent.mjs');
const stampFile = (): string => path.join(dataDir, 'agent-bundle', 'agent.stamp.json');
const nodePtyCopy = (): string => path.join(dataDir, 'agent-bundle', 'node_modules', 'node-pty');

beforeAll(async () => {
  dataDir = newDataDir();
  command = (await prepareAgentBundle(dataDir)).hostCommand;
});

afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

/** Stands in for the broker: starts the agent holding its stdin, prints the agent's pid, then idles. */
const FAKE_BROKER = `
const [file, args, env, user] = JSON.parse(process.argv[1]);
const agent = require('node:child_process').spawn(file, args, { env, stdio: ['pipe', 'ignore', 'ignore'], detached: true, ...user });
console.log(agent.pid);
setInterval(() => {}, 1000);`;

describe('agent bundle', () => {
  it('is reused while its sources are unchanged', async () => {
    // A build writes each of these aside and renames it into place: a new inode, a new mtime.
    const outputs = (): Array<{ file: string; ino: number; mtimeMs: number }> =>
      [bundleFile(), stampFile(), nodePtyCopy()].map((file) => {
        const { ino, mtimeMs } = statSync(file);
        return { file, ino, mtimeMs };
      });
    const built = outputs();
    expect((await prepareAgentBundle(dataDir)).hostCommand).toEqual(command);
    expect(outputs()).toEqual(built);
  });

  it('is rebuilt when a file it was built from changed', async () => {
    const stamp = JSON.parse(readFileSync(stampFile(), 'utf8')) as { inputs: Record<string, string> };
    const [first] = Object.keys(stamp.inputs);
    expect(first).toBeDefined();
    stamp.inputs[first!] = '0:0';
    writeFileSync(stampFile(), JSON.stringify(stamp));
    const before = statSync(bundleFile()).mtimeMs;
    await prepareAgentBundle(dataDir);
    expect(statSync(bundleFile()).mtimeMs).toBeGreaterThan(before);
  });

  // Broker replicas share one data directory and start together: both copied node-pty into
  // it at once and one failed with EEXIST (found by reliability/load; 4 starts in 5 failed).
  it('is prepared by two brokers at once on a new data directory', async () => {
    const fresh = newDataDir();
    try {
      const both = await Promise.all([prepareAgentBundle(fresh), prepareAgentBundle(fresh)]);
      expect(both[1]).toEqual(both[0]);
      const pty = path.join(fresh, 'agent-bundle', 'node_modules', 'node-pty');
      expect(statSync(path.join(pty, 'build', 'Release', 'pty.node')).isFile()).toBe(true);
      expect(readdirSync(path.dirname(pty))).toEqual(['node-pty']);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  }, 120_000);

  it('runs an agent that dies with its parent, even one killed with SIGKILL', async () => {
    const workspace = path.join(dataDir, 'ws');
    mkdirSync(workspace);
    const env = {
      SANDBOX_ID: 'sb_bundle_test',
      SANDBOX_SIGNING_KEY: SigningKey.generate().toBase64url(),
      WORKSPACE_ROOT: workspace,
      HOST: '127.0.0.1',
      PORT: '0',
    };
    const broker = spawn(
      process.execPath,
      ['-e', FAKE_BROKER, JSON.stringify([command.file, command.args, env, asAgentUser(workspace)])],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const [line]: unknown[] = await once(createInterface({ input: broker.stdout }), 'line');
    const agentPid = Number(line);
    expect(isAlive(agentPid)).toBe(true);

    broker.kill('SIGKILL');
    const deadline = Date.now() + 8000;
    while (isAlive(agentPid) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(isAlive(agentPid)).toBe(false);
  });
});
