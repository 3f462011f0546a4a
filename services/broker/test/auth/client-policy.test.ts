import { describe, expect, it } from '@jest/globals';
import { CAPABILITY_SCOPES, type CallerScope } from '@sbx/protocol';
import { resolveClientPolicy } from '../../src/domain/auth/client-policy.js';
import type { Principal } from '../../src/domain/auth/principal.js';
import { PolicyRepository } from '../../src/store/policy-repository.js';
import { backends, useTestDatabase } from '../support/test-database.js';

const backend = backends.find((b) => b.available) ?? backends[backends.length - 1]!;

function caller(clientId: string | undefined): Principal {
  return {
    tenantId: 'acme',
    id: 'alice',
    ownerId: 'alice',
    type: 'user',
    scopes: new Set<CallerScope>(['write:sandbox']),
    via: clientId === undefined ? 'api_key' : 'oidc',
    clientId,
  };
}

describe(`client policy of a caller [${backend.name}]`, () => {
  const db = useTestDatabase(backend);
  const policies = () => new PolicyRepository(db().prisma);

  it('gives a client with a row its sidecar, sandbox environment and capability ceiling', async () => {
    await policies().upsertClientPolicy('wallfacer', {
      sidecarImage: 'ghcr.io/latere/credential-broker:1.4',
      sidecarAudience: 'https://llm-proxy.internal',
      sidecarScopes: ['llm:invoke'],
      sandboxEnv: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9000' },
      maxCapabilities: ['fs_write', 'process'],
    });
    const policy = await resolveClientPolicy(caller('wallfacer'), policies());
    expect(policy).toEqual({
      clientId: 'wallfacer',
      sidecar: {
        image: 'ghcr.io/latere/credential-broker:1.4',
        audience: 'https://llm-proxy.internal',
        scopes: ['llm:invoke'],
      },
      sandboxEnv: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9000' },
      maxCapabilities: ['fs:rw', 'process'],
    });
  });

  it('gives a client without a row, and a caller without a client, no sidecar and no cap', async () => {
    for (const clientId of ['latere-cli-unregistered', undefined]) {
      const policy = await resolveClientPolicy(caller(clientId), policies());
      expect(policy).toMatchObject({
        sidecar: undefined,
        sandboxEnv: {},
        maxCapabilities: [...CAPABILITY_SCOPES],
      });
    }
  });

  it('caps at nothing when a row names only capabilities that do not exist', async () => {
    await policies().upsertClientPolicy('typo-client', { maxCapabilities: ['fs:write', 'shel'] });
    const policy = await resolveClientPolicy(caller('typo-client'), policies());
    expect(policy.maxCapabilities).toEqual([]);
  });
});
