// A warm pool of real local sandboxes (bubblewrap where this host has it): an OAuth
// client with a policy row ensures on a new thread and gets a warm sandbox whose user
// processes see the client's variables at once (per-claim injection, no cold start:
// the agent that answered before the claim is the one that answers after it), and the
// pool refills.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import type { LocalProvider } from '../../src/providers/local-provider.js';
import { startLocalKit, type LocalKit } from '../providers/local-provider-kit.js';
import { until } from '../process/broker-process.js';
import { bearer } from '../support/broker-harness.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';
import { backends } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;
const isolation = existsSync('/usr/bin/bwrap') ? 'bubblewrap' : 'none';

describe(`warm pool of local sandboxes (${isolation}) [${backend.name}]`, () => {
  let idp: TestOidcIssuer;
  let kit: LocalKit | undefined;
  beforeAll(async () => {
    idp = await startTestOidcIssuer();
  });
  const broker = useBroker<LocalProvider>(backend, () => ({
    provider: async (onAgentExit) => (kit = await startLocalKit({ isolation, onAgentExit })).provider,
    oidc: createOidcVerifier({ issuer: idp.issuer, audience: idp.audience, jwksUri: idp.jwksUri }),
    warmPoolSize: 2,
  }));
  afterAll(async () => {
    await kit?.dispose();
    await idp.close();
  });

  const warmIds = async () =>
    new Set((await broker.repositories.warmPool.listAll('local')).map((row) => row.id));

  it("claims a running warm sandbox and gives its processes the client's variables", async () => {
    await until(async () => (await warmIds()).size === 2, 'the pool to fill', 50);
    const before = await warmIds();
    await broker.repositories.policies.upsertClientPolicy('warm-client', {
      sandboxEnv: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9000' },
    });
    const caller = idp.sign({
      sub: 'alice',
      client_id: 'warm-client',
      tenant_id: broker.tenantId,
      scope: 'write:sandbox exec:sandbox',
    });

    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(caller))
      .send({ thread_id: 'thr_warm_local', mode: 'ensure', actor: { type: 'agent', id: 'agent-1' } });
    expect(res.status).toBe(200);
    const session = res.body as { token: string; sandbox: { id: string; http_base_url: string } };
    expect(before.has(session.sandbox.id)).toBe(true);
    const exec = await fetch(`${session.sandbox.http_base_url}/v1/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ cmd: 'echo "$ANTHROPIC_BASE_URL $HOME"', timeout_ms: 10_000 }),
    });
    const body = (await exec.json()) as { stdout: string };
    expect(body.stdout).toBe(
      `http://127.0.0.1:9000 ${isolation === 'bubblewrap' ? '/workspace' : kit!.dataDir + '/workspaces/' + session.sandbox.id}\n`,
    );
    await until(async () => (await warmIds()).size === 2, 'the pool to refill', 50);
  });
});
