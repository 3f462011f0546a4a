// What a user process inside a bubblewrap sandbox can (not) see, asked through the agent's exec routes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Dataplane, SandboxSpec } from '../../src/providers/provider.js';
import { contractSpec } from './provider-contract.js';
import { isAlive, processesOfSandbox, startLocalKit, tokenFor, type LocalKit } from './local-provider-kit.js';

interface ExecResult {
  readonly exit_code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

async function call(
  dataplane: Dataplane,
  spec: SandboxSpec,
  route: string,
  body: unknown,
): Promise<Response> {
  return fetch(`${dataplane.httpBaseUrl}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokenFor(spec, ['process'])}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function exec(dataplane: Dataplane, spec: SandboxSpec, cmd: string): Promise<ExecResult> {
  const response = await call(dataplane, spec, '/v1/exec', { cmd });
  expect(response.status).toBe(200);
  return (await response.json()) as ExecResult;
}

let kit: LocalKit;
let dataplane: Dataplane;
const spec = contractSpec({ network: 'off' });

beforeAll(async () => {
  kit = await startLocalKit({ isolation: 'bubblewrap' });
  ({ dataplane } = await kit.provider.create(spec));
});

afterAll(async () => {
  await kit.dispose();
});

describe('local provider: user processes under bubblewrap', () => {
  it('cannot read the key file nor see the data directory, but can write the workspace', async () => {
    const keyFile = path.join(kit.dataDir, 'sandboxes', spec.sandboxId, 'agent.key');
    const cat = await exec(dataplane, spec, `cat ${keyFile}`);
    expect(cat.exit_code).not.toBe(0);
    expect(cat.stdout).not.toContain(spec.signingKey.toBase64url());

    const listing = await exec(dataplane, spec, `ls -A ${kit.dataDir}; echo end`);
    expect(listing.stdout).toBe('end\n');

    // The workspace is at /workspace inside, the working directory and HOME of every process.
    const written = await exec(
      dataplane,
      spec,
      'echo hello > /workspace/from-inside && cat from-inside && pwd && echo "$HOME"',
    );
    expect(written.stdout).toBe('hello\n/workspace\n/workspace\n');
    const workspace = path.join(kit.dataDir, 'workspaces', spec.sandboxId);
    expect(readFileSync(path.join(workspace, 'from-inside'), 'utf8')).toBe('hello\n');
    expect(dataplane.workspacePath).toBe('/workspace');
  });

  it('has no network but its own loopback when the spec says network off', async () => {
    const interfaces = await exec(dataplane, spec, 'cat /proc/net/dev');
    const names = interfaces.stdout
      .split('\n')
      .slice(2)
      .map((line) => line.split(':')[0]?.trim())
      .filter((name) => name !== undefined && name !== '');
    expect(names).toEqual(['lo']);
  });

  it('is ended by destroy', async () => {
    const other = contractSpec();
    const created = await kit.provider.create(other);
    const started = await call(created.dataplane, other, '/v1/processes', { argv: ['sleep', '300'] });
    expect(started.status).toBe(201);
    const running = processesOfSandbox(kit.dataDir, other.sandboxId);
    expect(running.length).toBeGreaterThan(0);
    await kit.provider.destroy(other.sandboxId);
    // Killed processes finish exiting on their own time: wait for that, with a generous ceiling.
    for (let polls = 0; polls < 500 && running.some(isAlive); polls++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(running.filter(isAlive)).toEqual([]);
  });
});
