// The behaviour every SandboxProvider shares, run against each implementation
// (the local provider with real agent processes, the fake one in memory).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SbxError, type ErrorCode } from '@sbx/protocol';
import { SigningKey } from '@sbx/tokens';
import type { SandboxProvider, SandboxSpec } from '../../src/providers/provider.js';

export interface ContractSubject {
  readonly provider: SandboxProvider;
  /** Closes the provider (if the test did not) and removes everything it created. */
  dispose(): Promise<void>;
}

let counter = 0;

export function contractSpec(overrides: Partial<SandboxSpec> = {}): SandboxSpec {
  counter += 1;
  return {
    sandboxId: `sb_contract_${process.pid}_${counter}`,
    tenantId: 'tenant_contract',
    signingKey: SigningKey.generate(),
    tokenIssuer: 'sbx-broker-test',
    network: 'on',
    ...overrides,
  };
}

export async function expectSbxError(promise: Promise<unknown>, code: ErrorCode): Promise<SbxError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(SbxError);
  expect((error as SbxError).code).toBe(code);
  return error as SbxError;
}

export function runProviderContract(label: string, open: () => Promise<ContractSubject>): void {
  describe(`${label}: provider contract`, () => {
    let subject: ContractSubject;
    let provider: SandboxProvider;

    beforeAll(async () => {
      subject = await open();
      provider = subject.provider;
    });
    afterAll(async () => {
      await subject.dispose();
    });

    it('creates a running sandbox whose ws base is the http base with the ws scheme', async () => {
      const spec = contractSpec();
      const { dataplane, providerRef } = await provider.create(spec);
      expect(providerRef).not.toBe('');
      expect(await provider.status(spec.sandboxId)).toBe('running');
      const http = new URL(dataplane.httpBaseUrl);
      const ws = new URL(dataplane.wsBaseUrl);
      expect(http.protocol).toBe('http:');
      expect(ws.protocol).toBe('ws:');
      expect(ws.host).toBe(http.host);
      await provider.destroy(spec.sandboxId);
    });

    it('gives two sandboxes different dataplanes', async () => {
      const [a, b] = [contractSpec(), contractSpec()];
      const [ra, rb] = await Promise.all([provider.create(a), provider.create(b)]);
      expect(ra.dataplane.httpBaseUrl).not.toBe(rb.dataplane.httpBaseUrl);
      await Promise.all([provider.destroy(a.sandboxId), provider.destroy(b.sandboxId)]);
    });

    it('refuses to create a sandbox that exists, leaving the first one running', async () => {
      const spec = contractSpec();
      await provider.create(spec);
      await expectSbxError(provider.create({ ...spec, signingKey: SigningKey.generate() }), 'CONFLICT');
      expect(await provider.status(spec.sandboxId)).toBe('running');
      await provider.destroy(spec.sandboxId);
    });

    it('stops and starts a sandbox; start of a running sandbox answers its dataplane', async () => {
      const spec = contractSpec();
      await provider.create(spec);
      await provider.stop(spec.sandboxId);
      expect(await provider.status(spec.sandboxId)).toBe('stopped');
      await provider.stop(spec.sandboxId);
      expect(await provider.status(spec.sandboxId)).toBe('stopped');
      const resumed = await provider.start(spec.sandboxId);
      expect(await provider.status(spec.sandboxId)).toBe('running');
      expect(await provider.start(spec.sandboxId)).toEqual(resumed);
      await provider.destroy(spec.sandboxId);
    });

    it('destroys idempotently; a destroyed sandbox is missing and cannot be started', async () => {
      const spec = contractSpec();
      await provider.create(spec);
      await provider.destroy(spec.sandboxId);
      expect(await provider.status(spec.sandboxId)).toBe('missing');
      await provider.destroy(spec.sandboxId);
      await provider.destroy(contractSpec().sandboxId);
      await expectSbxError(provider.start(spec.sandboxId), 'SANDBOX_NOT_FOUND');
      await expectSbxError(provider.stop(spec.sandboxId), 'SANDBOX_NOT_FOUND');
    });

    it('revokes and rotates the key of a sandbox, running or stopped; a missing one is not found', async () => {
      const spec = contractSpec();
      await provider.create(spec);
      const expiresAt = new Date(Date.now() + 60_000);
      await provider.revoke(spec.sandboxId, { jtis: [{ jti: 'tok_contract', expiresAt }] });
      await provider.rotateKey(spec.sandboxId, SigningKey.generate());
      await provider.revoke(spec.sandboxId, { jtis: [], notBefore: new Date() });
      // The provider's own health probe follows the new key.
      expect(await provider.status(spec.sandboxId)).toBe('running');
      await provider.stop(spec.sandboxId);
      await provider.revoke(spec.sandboxId, { jtis: [{ jti: 'tok_stopped', expiresAt }] });
      await provider.destroy(spec.sandboxId);
      await expectSbxError(provider.revoke(spec.sandboxId, { jtis: [] }), 'SANDBOX_NOT_FOUND');
      await expectSbxError(provider.rotateKey(spec.sandboxId, SigningKey.generate()), 'SANDBOX_NOT_FOUND');
    });

    it('runs operations on one sandbox in order: a destroy issued during create wins', async () => {
      const spec = contractSpec();
      const created = provider.create(spec);
      const destroyed = provider.destroy(spec.sandboxId);
      await Promise.all([created, destroyed]);
      expect(await provider.status(spec.sandboxId)).toBe('missing');
    });

    it('refuses sandbox ids that are not safe names', async () => {
      const escape = await expectSbxError(
        provider.create(contractSpec({ sandboxId: '../escape' })),
        'BAD_REQUEST',
      );
      expect(escape.status).toBe(400);
      await expectSbxError(provider.status('a/b'), 'BAD_REQUEST');
    });
  });

  describe(`${label}: provider close`, () => {
    it('stops every sandbox and refuses new work afterwards', async () => {
      const subject = await open();
      try {
        const [a, b] = [contractSpec(), contractSpec()];
        await Promise.all([subject.provider.create(a), subject.provider.create(b)]);
        await subject.provider.close();
        expect(await subject.provider.status(a.sandboxId)).not.toBe('running');
        expect(await subject.provider.status(b.sandboxId)).not.toBe('running');
        await expectSbxError(subject.provider.create(contractSpec()), 'PROVIDER_UNAVAILABLE');
        await expectSbxError(subject.provider.start(a.sandboxId), 'PROVIDER_UNAVAILABLE');
      } finally {
        await subject.dispose();
      }
    });
  });
}
