// Pieces both session route families use: the call context, rate limiting,
// Idempotency-Key handling and parameter parsing.
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { parseOrThrow } from '@sbx/protocol';
import { jsonBodyOf, requestIdOf } from '@sbx/service-kit';
import type { AuditAction, AuditContext, AuditTrail } from '../../domain/audit/audit-trail.js';
import type { IdempotencyGuard, IdempotentResponse } from '../../domain/idempotency/idempotency-guard.js';
import { parseIdempotencyKey, requestFingerprint } from '../../domain/idempotency/request-fingerprint.js';
import type { RateLimitBucket, RateLimiter } from '../../domain/rate-limit/rate-limiter.js';
import { principalOf } from '../auth/caller-auth-middleware.js';

/** What every session route needs besides the service. */
export interface SessionHttpDeps {
  /** `authenticateCaller(authenticator, logger)`: puts the Principal on the response. */
  readonly authenticate: RequestHandler;
  readonly rateLimiter: RateLimiter;
  readonly idempotency: IdempotencyGuard;
  readonly audit: AuditTrail;
}

export function callContext(res: Response): AuditContext {
  return { requestId: requestIdOf(res), principal: principalOf(res) };
}

/**
 * 429 RATE_LIMITED with Retry-After past the principal's limit. Only the first
 * refusal of a window is audited: a flood must not turn into a flood of rows.
 */
export function rateLimit(
  deps: SessionHttpDeps,
  bucket: RateLimitBucket,
  action: AuditAction,
): RequestHandler {
  return async (_req, res, next) => {
    const principal = principalOf(res);
    const verdict = await deps.rateLimiter.take(bucket, {
      tenantId: principal.tenantId,
      principalId: principal.id,
    });
    if (!verdict.allowed) {
      if (verdict.firstRefusal) await deps.audit.record(action, verdict.error.code, callContext(res));
      throw verdict.error;
    }
    next();
  };
}

/** Runs `handler` under the request's Idempotency-Key when it has one, and sends its JSON answer. */
export function idempotentJson(
  guard: IdempotencyGuard,
  handler: (req: Request, res: Response) => Promise<IdempotentResponse>,
): RequestHandler {
  return async (req, res) => {
    const header = req.get('idempotency-key');
    if (header === undefined) {
      const answer = await handler(req, res);
      res.status(answer.status).json(answer.body);
      return;
    }
    const principal = principalOf(res);
    const path = req.originalUrl.split('?')[0] ?? req.path;
    const outcome = await guard.run(
      { tenantId: principal.tenantId, principalId: principal.id, key: parseIdempotencyKey(header) },
      requestFingerprint(req.method, path, req.body),
      () => handler(req, res),
    );
    if (outcome.replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.status(outcome.status).json(outcome.body);
  };
}

/** Route parameters, checked against the route's schema (400 BAD_REQUEST naming the problem). */
export function pathOf<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  return parseOrThrow(schema, { ...req.params }, 'path');
}

/** A JSON body (415 for one of another type); a request without one counts as `{}` where the schema allows it. */
export function bodyOf<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  const body = jsonBodyOf(req);
  return parseOrThrow(schema, body ?? {});
}
