// Client-policy sidecars (sandboxd authentication seed, "The client_id claim") on a real
// broker with the FAKE provider standing in for Docker/Kubernetes (the providers' own
// contract tests check that a spec's sidecar becomes a container): an OAuth caller whose
// client has a policy row gets a sandbox whose spec names the row's sidecar image with a
// pod-scoped ES256 JWT (verifiable against the broker's JWKS, audience and scopes from the
// row) and the row's environment; a client without a row and an API key get neither.
import { createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { createOidcVerifier } from '../../src/domain/auth/oidc-verifier.js';
import { PolicyRepository } from '../../src/store/policy-repository.js';
import { bearer } from '../support/broker-harness.js';
import { startTestOidcIssuer, type TestOidcIssuer } from '../support/test-oidc-issuer.js';
import { describeEachBackend } from '../support/test-database.js';
import { useBroker } from '../support/use-broker.js';

interface Jwk {
  readonly kid: string;
  readonly alg: string;
}

describeEachBackend('client-policy sidecars', (backend) => {
  let idp: TestOidcIssuer;
  beforeAll(async () => {
    idp = await startTestOidcIssuer();
  });
  afterAll(() => idp.close());
  const broker = useBroker(backend, () => ({
    oidc: createOidcVerifier({ issuer: idp.issuer, audience: idp.audience, jwksUri: idp.jwksUri }),
  }));

  const ensure = async (credential: string, thread: string) => {
    const res = await request(broker.url)
      .post('/v1/sandbox/sessions')
      .set(bearer(credential))
      .send({ thread_id: thread, mode: 'ensure' });
    expect(res.status).toBe(200);
    return broker.provider.specOf((res.body as { sandbox: { id: string } }).sandbox.id)!;
  };
  const oauthCaller = (clientId: string) =>
    idp.sign({
      sub: `user-${clientId}`,
      client_id: clientId,
      tenant_id: broker.tenantId,
      scope: 'write:sandbox',
    });

  it('gives a client with a row its sidecar, a JWT the broker signs for it, and its environment', async () => {
    await new PolicyRepository(broker.database.prisma).upsertClientPolicy('wallfacer', {
      sidecarImage: 'ghcr.io/example/credential-broker:1.4',
      sidecarAudience: 'https://llm-proxy.internal',
      sidecarScopes: ['llm:invoke'],
      sandboxEnv: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9000' },
    });
    const spec = await ensure(oauthCaller('wallfacer'), 'thr_sidecar');

    expect(spec.environment).toEqual({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9000' });
    expect(spec.sidecar?.image).toBe('ghcr.io/example/credential-broker:1.4');
    const [header, payload, signature] = spec.sidecar!.token.split('.') as [string, string, string];
    const jwks = await request(broker.url).get('/.well-known/jwks.json');
    expect(jwks.status).toBe(200);
    const decoded = JSON.parse(Buffer.from(header, 'base64url').toString()) as { alg: string; kid: string };
    expect(decoded.alg).toBe('ES256');
    const jwk = (jwks.body as { keys: Jwk[] }).keys.find((key) => key.kid === decoded.kid);
    expect(jwk).toBeDefined();
    const publicKey = createPublicKey({ key: jwk as never, format: 'jwk' });
    const signed = verify(
      'sha256',
      Buffer.from(`${header}.${payload}`),
      { key: publicKey, dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature, 'base64url'),
    );
    expect(signed).toBe(true);
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({
      aud: 'https://llm-proxy.internal',
      scope: 'llm:invoke',
      client_id: 'wallfacer',
      tenant_id: broker.tenantId,
      sub: `sandbox:${spec.sandboxId}`,
    });
    expect(claims['exp']).toBeGreaterThan(Date.now() / 1000);
  });

  it('gives a client without a row, and an API key caller, no sidecar and no environment', async () => {
    const unregistered = await ensure(oauthCaller('no-row-client'), 'thr_no_row');
    const key = await broker.apiKey({ scopes: ['write:sandbox'] });
    const viaKey = await ensure(key, 'thr_api_key');
    for (const spec of [unregistered, viaKey]) {
      expect(spec.sidecar).toBeUndefined();
      expect(spec.environment).toBeUndefined();
    }
  });
});
