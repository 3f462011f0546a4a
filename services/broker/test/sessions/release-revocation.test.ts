// A release revokes its binding's tokens at the sandbox's agent. Releases of one sandbox's
// bindings race: the last one terminates the sandbox and destroys it, and an earlier one,
// already released in the database, failed writing the revocation list the destroy had just
// removed, answering 503 for a release that happened (found by reliability/load: 50 clients
// on 10 threads letting go at once). A sandbox that ended meanwhile has nothing to refuse;
// a live one whose list cannot be written still fails the release, to be retried.
import { describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { revokeSessionTokens, type RevocationDeps } from '../../src/domain/revocation/revocations.js';

const token = { jti: 'tok_1', audience: 'sb_1', expiresAt: new Date(Date.now() + 60_000) };

function depsWith(sandbox: { state: string } | null): Pick<RevocationDeps, 'store' | 'provider' | 'now'> {
  const store = {
    liveTokensOfSession: async () => [token],
    markRevoked: async () => undefined,
    findSandbox: async () => (sandbox === null ? null : { id: 'sb_1', ...sandbox }),
  };
  const provider = {
    revoke: async () => {
      throw new SbxError('PROVIDER_UNAVAILABLE', 'the revocation list of sandbox sb_1 could not be written');
    },
    rotateKey: async () => undefined,
  };
  return { store: store as unknown as RevocationDeps['store'], provider, now: Date.now };
}

describe('revoking a released binding’s tokens', () => {
  it('is done when the sandbox was terminated meanwhile', async () => {
    await expect(revokeSessionTokens(depsWith({ state: 'terminated' }), 'ssn_1')).resolves.toBe(1);
  });

  it('is done when the sandbox is gone', async () => {
    await expect(revokeSessionTokens(depsWith(null), 'ssn_1')).resolves.toBe(1);
  });

  it('fails while the sandbox lives on, so that the release is retried', async () => {
    await expect(revokeSessionTokens(depsWith({ state: 'active' }), 'ssn_1')).rejects.toMatchObject({
      code: 'PROVIDER_UNAVAILABLE',
    });
  });
});
