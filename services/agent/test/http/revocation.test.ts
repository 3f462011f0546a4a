// Revocation on the agent: the provider replaces revocations.json next to the key file; the
// agent refuses the listed tokens on the next request and closes their open WebSockets 1008.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mintCapabilityToken, SigningKey } from '@sbx/tokens';
import { fileKeySource } from '../../src/adapters/key-source.js';
import { fileRevocationList, type RevocationList } from '../../src/adapters/revocation-list.js';
import { createAuthenticator } from '../../src/http/authenticator.js';
import { shellsFeature } from '../../src/http/shells/shells-feature.js';
import { ShellClient } from '../shells/shell-client.js';
import { startTestAgent, type TestAgent } from '../support/agent-harness.js';
import type { Closed } from '../support/ws-client.js';

const dir = mkdtempSync(path.join(tmpdir(), 'sbx-revocation-'));
const listFile = path.join(dir, 'revocations.json');
let revocations: RevocationList;
let agent: TestAgent;

/** What a provider does: write aside, then rename over the list. */
function writeList(list: { not_before?: number; jtis: Record<string, number> }): void {
  const scratch = `${listFile}.tmp`;
  writeFileSync(scratch, JSON.stringify({ version: 1, ...list }));
  renameSync(scratch, listFile);
}

function claimsOf(token: string): { jti: string; exp: number } {
  const payload = token.split('.')[1] ?? '';
  const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  if (typeof claims !== 'object' || claims === null || !('jti' in claims) || !('exp' in claims))
    throw new Error('not a capability token');
  return { jti: String(claims.jti), exp: Number(claims.exp) };
}

/** Resolves with the close, or rejects after a generous ceiling (the target is 1 s). */
async function closedWithin(socket: { closed: Promise<Closed> }, ceilingMs: number): Promise<Closed> {
  let timer: NodeJS.Timeout | undefined;
  const ceiling = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`not closed within ${ceilingMs} ms`)), ceilingMs);
  });
  try {
    return await Promise.race([socket.closed, ceiling]);
  } finally {
    clearTimeout(timer);
  }
}

const info = (token: string) =>
  fetch(`${agent.httpUrl}/v1/info`, { headers: { authorization: `Bearer ${token}` } });

beforeAll(async () => {
  revocations = fileRevocationList({ path: listFile, pollMs: 250 });
  agent = await startTestAgent({ features: (ctx) => [shellsFeature(ctx)], revocations });
});
afterAll(async () => {
  await agent.close();
  revocations.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('revocation list on the agent', () => {
  it('refuses a revoked jti on the next request and closes its open shell 1008; others go on', async () => {
    const revoked = agent.token(['shell']);
    const kept = agent.token(['shell']);
    expect((await info(revoked)).status).toBe(200);
    const doomed = await ShellClient.start(`${agent.wsUrl}/v1/shell/ws`, revoked);
    const survivor = await ShellClient.start(`${agent.wsUrl}/v1/shell/ws`, kept);
    const { jti, exp } = claimsOf(revoked);
    const started = Date.now();
    writeList({ jtis: { [jti]: exp } });
    const closed = await closedWithin(doomed.socket, 5000);
    process.stdout.write(`revoked shell closed after ${Date.now() - started} ms\n`);
    expect(closed).toEqual({ code: 1008, reason: 'token was revoked' });
    const refused = await info(revoked);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({
      error: { code: 'UNAUTHENTICATED', details: { reason: 'revoked' } },
    });
    expect((await info(kept)).status).toBe(200);
    survivor.type('echo still-here');
    await survivor.waitFor(/^still-here$/m);
    survivor.close();
  });

  it('a bad list keeps the last good one', async () => {
    const token = agent.token(['shell']);
    writeList({ jtis: { [claimsOf(token).jti]: claimsOf(token).exp } });
    const deadline = Date.now() + 5000;
    while ((await info(token)).status !== 401 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    writeFileSync(listFile, '{"version":1,"jtis":'); // torn write
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await info(token)).status).toBe(401);
  });

  it('a list that disappears while it is replaced (a Docker archive upload) keeps its revocations', async () => {
    const token = agent.token(['shell']);
    writeList({ jtis: { [claimsOf(token).jti]: claimsOf(token).exp } });
    expect((await info(token)).status).toBe(401); // the authenticator re-reads the list on every request
    rmSync(listFile);
    expect((await info(token)).status).toBe(401);
    const next = agent.token(['shell']);
    writeList({
      jtis: { [claimsOf(token).jti]: claimsOf(token).exp, [claimsOf(next).jti]: claimsOf(next).exp },
    });
    expect((await info(next)).status).toBe(401);
    expect((await info(token)).status).toBe(401);
  });

  it('not_before refuses every token issued before it, open shells included', async () => {
    const old = agent.token(['shell'], { issuedSecondsAgo: 10 });
    const shell = await ShellClient.start(`${agent.wsUrl}/v1/shell/ws`, old);
    writeList({ not_before: Math.floor(Date.now() / 1000) - 5, jtis: {} });
    expect((await closedWithin(shell.socket, 5000)).code).toBe(1008);
    expect((await info(old)).status).toBe(401);
    expect((await info(agent.token(['shell']))).status).toBe(200);
  });
});

describe('key rotation for a leak', () => {
  it('a newer not_before retires the previous key at once, without the grace', () => {
    const keyDir = mkdtempSync(path.join(tmpdir(), 'sbx-retire-'));
    try {
      const keyFile = path.join(keyDir, 'agent.key');
      const oldKey = SigningKey.generate();
      const newKey = SigningKey.generate();
      writeFileSync(keyFile, oldKey.toBase64url());
      const now = (): number => Date.now();
      const keys = fileKeySource({ path: keyFile, graceMs: 60_000, now, checkIntervalMs: 0 });
      let listener: (() => void) | undefined;
      let notBefore = 0;
      const list: RevocationList = {
        isRevoked: () => false,
        get notBefore() {
          return notBefore;
        },
        refresh: () => {},
        onChange: (fn) => ((listener = fn), () => {}),
        close: () => {},
      };
      const auth = createAuthenticator({
        keys,
        sandboxId: 'sb_1',
        issuer: 'sbx-broker',
        maxTtlSeconds: 3600,
        now,
        revocations: list,
      });
      const mint = (key: SigningKey) =>
        mintCapabilityToken({
          key,
          issuer: 'sbx-broker',
          subject: 'u',
          sandboxId: 'sb_1',
          scopes: ['fs:ro'],
          ttlSeconds: 300,
          now,
        }).token;
      const oldToken = mint(oldKey);
      expect(auth.authenticate(oldToken).claims.sub).toBe('u');
      writeFileSync(keyFile, newKey.toBase64url());
      notBefore = Math.floor(Date.now() / 1000);
      listener?.();
      expect(() => auth.authenticate(oldToken)).toThrow(/signature/);
      expect(auth.authenticate(mint(newKey)).claims.sub).toBe('u');
    } finally {
      rmSync(keyDir, { recursive: true, force: true });
    }
  });
});
