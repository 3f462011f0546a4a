import { describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { FakeProvider } from '../../src/providers/fake-provider.js';
import { contractSpec, expectSbxError } from './provider-contract.js';

describe('fake provider controls', () => {
  it('is starting while a delayed create runs, running after', async () => {
    const provider = new FakeProvider({ delays: { create: 50 } });
    const spec = contractSpec();
    const created = provider.create(spec);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await provider.status(spec.sandboxId)).toBe('starting');
    await created;
    expect(await provider.status(spec.sandboxId)).toBe('running');
    expect(provider.specOf(spec.sandboxId)?.signingKey).toBe(spec.signingKey);
  });

  it('fails the next operation as told, then behaves again', async () => {
    const provider = new FakeProvider();
    const spec = contractSpec();
    provider.failNext('create');
    provider.failNext('create', new SbxError('TIMEOUT', 'slow backend'));
    await expectSbxError(provider.create(spec), 'PROVIDER_UNAVAILABLE');
    expect(await provider.status(spec.sandboxId)).toBe('missing');
    await expectSbxError(provider.create(spec), 'TIMEOUT');
    await provider.create(spec);
    expect(await provider.status(spec.sandboxId)).toBe('running');

    await provider.stop(spec.sandboxId);
    provider.failNext('start');
    await expectSbxError(provider.start(spec.sandboxId), 'PROVIDER_UNAVAILABLE');
    expect(await provider.status(spec.sandboxId)).toBe('failed');
    expect(provider.calls('create')).toEqual([spec.sandboxId, spec.sandboxId, spec.sandboxId]);
  });

  it('holds operations until released, and counts how many ran at once', async () => {
    const provider = new FakeProvider();
    const release = provider.hold('create');
    const specs = [contractSpec(), contractSpec(), contractSpec()];
    const created = specs.map((spec) => provider.create(spec));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(provider.calls('create')).toHaveLength(3);
    expect(await Promise.all(specs.map((spec) => provider.status(spec.sandboxId)))).toEqual([
      'starting',
      'starting',
      'starting',
    ]);
    release();
    await Promise.all(created);
    expect(provider.maxConcurrent('create')).toBe(3);
  });

  it('runs calls on one sandbox one at a time', async () => {
    const provider = new FakeProvider({ delays: { create: 20 } });
    const spec = contractSpec();
    const results = await Promise.allSettled([provider.create(spec), provider.create(spec)]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected']);
    expect(provider.maxConcurrent('create')).toBe(1);
  });

  it('simulates an agent crash: failed status and the exit callback', async () => {
    const exits: unknown[][] = [];
    const provider = new FakeProvider({ onAgentExit: (...args) => exits.push(args) });
    const spec = contractSpec();
    await provider.create(spec);
    provider.crash(spec.sandboxId, 137);
    expect(exits).toEqual([[spec.sandboxId, 137, null]]);
    expect(await provider.status(spec.sandboxId)).toBe('failed');
    await provider.start(spec.sandboxId);
    expect(await provider.status(spec.sandboxId)).toBe('running');
  });
});
