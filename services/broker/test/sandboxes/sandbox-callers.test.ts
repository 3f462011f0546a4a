// Who calls the sandbox resource API with an OIDC token (docs/sandboxes.md, docs/protocol.md
// "Callers"), through a real broker, real Postgres and the local provider's real agents: a
// user's agent acting for the user (`act`) creates and runs in the user's sandbox, and the
// sandbox's command log names both; an OAuth client's policy row decides the environment of
// the sandboxes it creates through POST /v1/sandboxes, as it does for negotiated ones.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { PolicyRepository } from '../../src/store/policy-repository.js';
import { bearer } from '../support/broker-harness.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';
import { backends } from '../support/test-database.js';
import { useLocalBroker } from '../support/use-local-broker.js';

const backend = backends.find((b) => b.name === 'postgres' && b.available) ?? backends[0]!;
const SCOPES = 'read:sandbox write:sandbox exec:sandbox';

describe(`sandbox resources for OIDC callers [${backend.name}]`, () => {
  let idp: TestOidcIssuer;
  beforeAll(async () => {
    idp = await startTestOidcIssuer();
  });
  afterAll(() => idp.close());
  const broker = useLocalBroker(backend, () => ({
    isolation: 'bubblewrap',
    settings: { provisioningWaitMs: 20_000 },
    oidc: createOidcVerifier({ issuer: idp.issuer, audience: idp.audience, jwksUri: idp.jwksUri }),
  }));

  const call = (method: 'get' | 'post', path: string, token: string) =>
    request(broker.url)[method](path).set(bearer(token));
  const create = async (token: string) => {
    const created = await call('post', '/v1/sandboxes', token).send({});
    expect(created.status).toBe(201);
    return created.body as { id: string; owner_id: string };
  };
  const run = async (token: string, id: string, cmd: string) => {
    const ran = await call('post', `/v1/sandboxes/${id}/commands`, token).send({ cmd, timeout_ms: 20_000 });
    expect(ran.status).toBe(200);
    return ran.body as { stdout: string; exit_code: number };
  };

  it("runs a user's agent as the user, with the agent named in the sandbox's command log", async () => {
    const user = `alice-${randomUUID()}`;
    const agentToken = idp.sign({
      sub: user,
      act: { sub: 'agent-42' },
      tenant_id: broker.tenantId,
      scope: SCOPES,
    });
    const sandbox = await create(agentToken);
    expect(sandbox.owner_id).toBe(user);
    expect(await run(agentToken, sandbox.id, 'echo for-alice')).toMatchObject({
      exit_code: 0,
      stdout: 'for-alice\n',
    });

    // The user's own token sees the sandbox its agent made: the owner is the user.
    const userToken = idp.sign({ sub: user, tenant_id: broker.tenantId, scope: SCOPES });
    const listed = await call('get', '/v1/sandboxes', userToken);
    expect((listed.body.items as { id: string }[]).map((s) => s.id)).toEqual([sandbox.id]);
    await run(userToken, sandbox.id, 'echo by-alice');

    const logs = await call('get', `/v1/sandboxes/${sandbox.id}/logs?limit=10`, userToken);
    const entries = logs.body.items as { command: string; sub: string; act_sub: string | null }[];
    expect(entries.map(({ command, sub, act_sub }) => ({ command, sub, act_sub }))).toEqual([
      { command: 'echo for-alice', sub: user, act_sub: 'agent-42' },
      { command: 'echo by-alice', sub: user, act_sub: null },
    ]);
  }, 120_000);

  it("gives the sandboxes an OAuth client creates its policy row's environment, and no other client's", async () => {
    await new PolicyRepository(broker.database.prisma).upsertClientPolicy('wallfacer', {
      sandboxEnv: { SBX_CLIENT_MARK: 'from-the-row' },
    });
    const caller = (clientId: string) =>
      idp.sign({
        sub: `user-${randomUUID()}`,
        client_id: clientId,
        tenant_id: broker.tenantId,
        scope: SCOPES,
      });
    const withRow = caller('wallfacer');
    const withoutRow = caller('no-row-client');
    const marked = await create(withRow);
    const plain = await create(withoutRow);
    const mark = 'echo "mark=${SBX_CLIENT_MARK:-none}"';
    expect((await run(withRow, marked.id, mark)).stdout).toBe('mark=from-the-row\n');
    expect((await run(withoutRow, plain.id, mark)).stdout).toBe('mark=none\n');
  }, 120_000);
});
