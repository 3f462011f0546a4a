import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { SbxError, type CapabilityScope } from '@sbx/protocol';
import { hasScope, requireScope, TokenError, type VerifiedCapability } from '@sbx/tokens';
import type { AgentMetrics } from '../domain/metrics/agent-metrics.js';
import type { Authenticator } from './authenticator.js';

// RFC 6750 §2.1 (and RFC 9110 §11.1): the scheme is case-insensitive and 1*SP follows it;
// the token itself keeps the strict b64token charset. The broker parses it the same way.
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i;

/** The bearer token of a request, or UNAUTHENTICATED. */
export function bearerTokenOf(req: Request): string {
  const header = req.get('authorization');
  if (header === undefined) throw new SbxError('UNAUTHENTICATED', 'missing Authorization: Bearer <token>');
  const match = BEARER.exec(header);
  if (match?.[1] === undefined)
    throw new SbxError('UNAUTHENTICATED', 'Authorization must be "Bearer <token>"');
  return match[1];
}

const verifiedByResponse = new WeakMap<Response, VerifiedCapability>();

/** The capability verified for this request, if any (request logs use it). */
export function findCapability(res: Response): VerifiedCapability | undefined {
  return verifiedByResponse.get(res);
}

/** The capability a previous middleware verified for this request. */
export function capabilityOf(res: Response): VerifiedCapability {
  const capability = verifiedByResponse.get(res);
  // Only a signed-URL request reaches a route unauthenticated; elsewhere it is no credential at all.
  if (capability === undefined)
    throw new SbxError('UNAUTHENTICATED', 'this route needs Authorization: Bearer <token>');
  return capability;
}

/**
 * Authenticates the bearer token; the scope is checked per operation, not per HTTP method.
 * A missing or malformed header is counted here; refused tokens by the (counting) authenticator.
 */
export function authenticate(
  auth: Authenticator,
  metrics?: Pick<AgentMetrics, 'authFailed'>,
): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    let token: string;
    try {
      token = bearerTokenOf(req);
    } catch (err) {
      metrics?.authFailed(req.get('authorization') === undefined ? 'missing' : 'malformed');
      throw err;
    }
    const verified = auth.authenticate(token);
    if (!(verified instanceof Promise)) {
      verifiedByResponse.set(res, verified);
      next();
      return;
    }
    // Opaque tokens (D20): the broker answers later (callers wrap this handler, so no promise is returned).
    void settle(verified, res, next);
  };
}

async function settle(
  verified: Promise<VerifiedCapability>,
  res: Response,
  next: NextFunction,
): Promise<void> {
  let capability: VerifiedCapability;
  try {
    capability = await verified;
  } catch (err) {
    next(err);
    return;
  }
  verifiedByResponse.set(res, capability);
  next();
}

/**
 * Requires `scope` (directly or implied: fs:rw covers fs:ro) of the request's capability;
 * with `orScopes`, any one of `scope` and `orScopes` is enough.
 */
export function requireCapability(scope: CapabilityScope, ...orScopes: CapabilityScope[]): RequestHandler {
  const anyOf = [scope, ...orScopes];
  return (_req: Request, res: Response, next: NextFunction) => {
    const capability = capabilityOf(res);
    if (orScopes.length === 0) requireScope(capability, scope);
    else if (!anyOf.some((wanted) => hasScope(capability.scopes, wanted)))
      throw new TokenError('insufficient_scope', `token grants none of ${anyOf.join(', ')}`);
    next();
  };
}
