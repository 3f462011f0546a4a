// Caller authentication for broker routes. `authenticateCaller` puts the
// Principal on the response (a WeakMap, so it leaves with the request);
// `requireCallerScope` checks one scope per route. Failures go to the shared
// error middleware, which answers the protocol envelope (and WWW-Authenticate:
// Bearer for UNAUTHENTICATED).
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { SbxError, type CallerScope } from '@sbx/protocol';
import { requestIdOf, type Logger } from '@sbx/service-kit';
import type { CallerAuthenticator } from '../../domain/auth/authenticate-caller.js';
import { hasCallerScope, type Principal } from '../../domain/auth/principal.js';
import type { AuthFailureLimiter } from '../../domain/rate-limit/auth-failure-limiter.js';
import type { BrokerMetrics } from '../../domain/metrics/broker-metrics.js';

const principalByResponse = new WeakMap<Response, Principal>();

/** The caller of this request, if it was authenticated (request logs use it). */
export function findPrincipal(res: Response): Principal | undefined {
  return principalByResponse.get(res);
}

/** The caller authenticated by an earlier middleware. */
export function principalOf(res: Response): Principal {
  const principal = principalByResponse.get(res);
  if (principal === undefined) throw new SbxError('INTERNAL', 'route is missing its caller authentication');
  return principal;
}

/** Who called, for logs: never the credential. */
function auditFieldsOf(principal: Principal): Record<string, unknown> {
  return {
    principal: principal.id,
    type: principal.type,
    tenant: principal.tenantId,
    via: principal.via,
    ...(principal.keyId === undefined ? {} : { keyId: principal.keyId }),
    ...(principal.jti === undefined ? {} : { jti: principal.jti }),
    ...(principal.actingFor === undefined ? {} : { actingFor: principal.actingFor }),
  };
}

function logRefusal(logger: Logger, res: Response, err: unknown): void {
  const error = SbxError.from(err);
  const fields = { requestId: requestIdOf(res), code: error.code, reason: error.message };
  // A refused credential is routine; an identity provider we cannot reach is an operator's problem.
  if (error.code === 'UNAUTHENTICATED') logger.info(fields, 'caller authentication refused');
  else logger.warn({ ...fields, err: error.cause ?? error }, 'caller authentication failed');
}

/** The client address failures are counted by: `req.ip`, which honours the app's `trust proxy`. */
const addressOf = (req: Request): string => req.ip ?? req.socket.remoteAddress ?? 'unknown';

/**
 * With `failures`, each refused credential counts against the client address; past its limit
 * a refused credential answers 429 instead of 401, the same 429 whatever it was, and only the
 * burst's first is logged (by the limiter). A valid credential is always checked and served:
 * only failures are limited, so nobody's guessing locks out a key from the same address.
 */
export function authenticateCaller(
  authenticator: CallerAuthenticator,
  logger: Logger,
  metrics?: Pick<BrokerMetrics, 'authRejected'>,
  failures?: AuthFailureLimiter,
): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const authorization = req.get('authorization');
    // A key verified moments ago needs no lookup.
    const recognized = authenticator.recognize(authorization);
    if (recognized !== undefined) {
      principalByResponse.set(res, recognized);
      next();
      return;
    }
    let principal: Principal;
    try {
      principal = await authenticator.authenticate(authorization);
    } catch (err) {
      metrics?.authRejected(SbxError.from(err).code);
      const refused = SbxError.from(err).code === 'UNAUTHENTICATED' && authorization !== undefined;
      const limited = refused ? await failures?.recordFailure(addressOf(req)) : undefined;
      if (limited !== undefined) throw limited;
      logRefusal(logger, res, err);
      throw err;
    }
    principalByResponse.set(res, principal);
    logger.debug({ requestId: requestIdOf(res), ...auditFieldsOf(principal) }, 'caller authenticated');
    next();
  };
}

/** 403 FORBIDDEN unless the caller holds `scope` itself (no scope implies another). */
export function requireCallerScope(scope: CallerScope): RequestHandler {
  return (_req: Request, res: Response, next: NextFunction) => {
    if (!hasCallerScope(principalOf(res), scope)) {
      throw new SbxError('FORBIDDEN', `this operation requires the ${scope} scope`);
    }
    next();
  };
}
