// The agent bundle leaves out what the agent never runs (agent-bundle-trims.ts: unused
// modules of the workspace packages, zod's other locales): the agent it runs must still
// check requests against the protocol's schemas, in English, run commands and answer the
// operator's /metrics.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import { prepareAgentBundle } from '../../src/providers/agent-bundle.js';
import { asAgentUser, newDataDir } from './local-provider-kit.js';

const ISSUER = 'sbx-bundle-test';
const SANDBOX_ID = 'sb_bundle_serving';
const OPERATOR = 'operator-token-bundle-0123456';

let dataDir: string;
let agent: ChildProcess;
let baseUrl: string;
const key = SigningKey.generate();

beforeAll(async () => {
  dataDir = newDataDir();
  const workspace = path.join(dataDir, 'ws');
  mkdirSync(workspace);
  const command = (await prepareAgentBundle(dataDir)).hostCommand;
  agent = spawn(command.file, command.args, {
    ...asAgentUser(workspace),
    env: {
      PATH: '/usr/bin:/bin',
      SANDBOX_ID,
      SANDBOX_SIGNING_KEY: key.toBase64url(),
      SANDBOX_TOKEN_ISSUER: ISSUER,
      WORKSPACE_ROOT: workspace,
      HOST: '127.0.0.1',
      PORT: '0',
      AGENT_METRICS_TOKEN: OPERATOR,
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  for await (const line of createInterface({ input: agent.stdout! })) {
    const url = (JSON.parse(line) as { url?: string }).url;
    if (url !== undefined) {
      baseUrl = url;
      break;
    }
  }
  // Keep draining its log so the pipe never fills.
  agent.stdout!.resume();
}, 60_000);

afterAll(async () => {
  if (agent.exitCode === null) {
    agent.kill('SIGTERM');
    await once(agent, 'exit');
  }
  rmSync(dataDir, { recursive: true, force: true });
});

const exec = (body: unknown): Promise<Response> =>
  fetch(`${baseUrl}/v1/exec`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${mintCapabilityToken({ key, issuer: ISSUER, subject: 'u', sandboxId: SANDBOX_ID, scopes: ['process'], ttlSeconds: 300 }).token}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });

describe('the bundled agent', () => {
  it('refuses a malformed request with the protocol error and runs a well-formed one', async () => {
    const refused = await exec({ argv: 'echo' });
    expect(refused.status).toBe(400);
    // zod's English messages, the only locale the bundle keeps.
    expect(((await refused.json()) as { error?: unknown }).error).toMatchObject({
      code: 'BAD_REQUEST',
      message: 'invalid request body: argv: Invalid input: expected array, received string',
    });

    const ran = await exec({ argv: ['echo', 'bundled'] });
    expect(ran.status).toBe(200);
    const result = (await ran.json()) as { exit_code: number; stdout: string };
    expect(result).toMatchObject({ exit_code: 0, stdout: 'bundled\n' });
  });

  it("answers the operator's /metrics", async () => {
    const res = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${OPERATOR}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('sbx_agent_shells 0');
  });
});
