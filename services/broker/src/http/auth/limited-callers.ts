// Routes that verify a caller's credential themselves (the relay's /dp routes and sockets)
// count refused ones against the client address like authenticateCaller does: past the limit
// a refused credential is 429, a valid one is served (docs/security.md, "Hardening").
import { SbxError } from '@sbx/protocol';
import type { CallerAuthenticator } from '../../domain/auth/authenticate-caller.js';
import type { AuthFailureLimiter } from '../../domain/rate-limit/auth-failure-limiter.js';

export function withFailureLimit(
  callers: CallerAuthenticator,
  failures: AuthFailureLimiter | undefined,
  address: string,
): CallerAuthenticator {
  if (failures === undefined) return callers;
  return {
    recognize: (authorization) => callers.recognize(authorization),
    async authenticate(authorization) {
      try {
        return await callers.authenticate(authorization);
      } catch (err) {
        if (SbxError.from(err).code !== 'UNAUTHENTICATED') throw err;
        throw (await failures.recordFailure(address)) ?? err;
      }
    },
  };
}
