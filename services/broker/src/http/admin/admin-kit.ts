// What every `/admin/*` route does around its handler: the admin:sandbox check
// (403 before anything is parsed or looked up, so a refused caller learns
// nothing about the resource, not even whether its id is well-formed) and one
// audit row per request, whatever the outcome.
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { parseOrThrow, SbxError } from '@sbx/protocol';
import { jsonBodyOf, requestIdOf } from '@sbx/service-kit';
import type { AdminAudit, AdminTarget } from '../../domain/admin/admin-audit.js';
import type { AuditContext } from '../../domain/audit/audit-trail.js';
import { isAdmin } from '../../domain/auth/principal.js';
import { principalOf } from '../auth/caller-auth-middleware.js';

export interface AdminAnswer {
  readonly status: 200 | 201 | 204;
  readonly body?: unknown;
  /** A streamed answer: writes the body itself (headers included). */
  readonly stream?: (res: Response) => Promise<void>;
}

export type AdminHandler = (req: Request, context: AuditContext) => Promise<AdminAnswer>;

/** Which path parameter names the target, per kind (`id` of a sandbox or an api key). */
export type TargetOf = (req: Request) => AdminTarget;

export const noTarget: TargetOf = () => ({});

/** The raw path parameter, for the audit row only (it may be malformed; the handler validates it). */
export function targetParam(kind: string, param: string): TargetOf {
  return (req) => {
    const value = req.params[param];
    return { kind, id: typeof value === 'string' ? value.slice(0, 200) : undefined };
  };
}

function clientAddress(req: Request): string | undefined {
  return req.ip ?? req.socket.remoteAddress;
}

export function adminRoute(
  audit: AdminAudit,
  action: string,
  targetOf: TargetOf,
  handler: AdminHandler,
): RequestHandler {
  return async (req, res) => {
    const principal = principalOf(res);
    const context = { requestId: requestIdOf(res), principal };
    const record = (outcome: string) =>
      audit.record({
        action,
        outcome,
        requestId: context.requestId,
        principal,
        target: targetOf(req),
        clientAddress: clientAddress(req),
      });
    try {
      if (!isAdmin(principal))
        throw new SbxError('FORBIDDEN', 'this operation requires the admin:sandbox scope');
      const answer = await handler(req, context);
      if (answer.stream !== undefined) await answer.stream(res);
      await record('ok');
      if (answer.stream === undefined) send(res, answer);
    } catch (err) {
      await record(SbxError.from(err).code);
      throw err;
    }
  };
}

function send(res: Response, answer: AdminAnswer): void {
  if (answer.body === undefined) res.status(answer.status).end();
  else res.status(answer.status).json(answer.body);
}

export function queryOf<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  return parseOrThrow(schema, { ...req.query }, 'query');
}

export function paramsOf<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  return parseOrThrow(schema, { ...req.params }, 'path');
}

export function adminBodyOf<S extends z.ZodType>(schema: S, req: Request): z.output<S> {
  const body = jsonBodyOf(req);
  return parseOrThrow(schema, body ?? {});
}
