// `ANY /v1/sandboxes/{id}/dp/<agent path>` (relay mode, docs/sandboxes.md): the agent's own
// HTTP routes through the broker, bodies streamed both ways. The WebSocket routes under
// the same prefix are served by sandbox-session-socket.ts.
import { Router, type Request } from 'express';
import { SbxError } from '@sbx/protocol';
import { requestIdOf } from '@sbx/service-kit';
import type { AuditTrail } from '../../domain/audit/audit-trail.js';
import { bearerCredentialOf } from '../../domain/auth/authenticate-caller.js';
import { dataplanePath } from '../../domain/sandboxes/dataplane-operation.js';
import { relayHttp } from '../../relay/index.js';
import { resolveRelay, type DataplaneRelayDeps } from './dataplane-relay.js';

export interface DataplaneRelayRoutesDeps extends DataplaneRelayDeps {
  readonly audit: AuditTrail;
}

const PREFIX = /^\/v1\/sandboxes\/([^/]+)\/dp(\/.*)$/;

/** `req.path` is still percent-encoded: the agent path is checked and forwarded as dataplanePath resolves it. */
function split(req: Request): { sandboxId: string; agentPath: string; query: string } {
  const match = PREFIX.exec(req.path);
  if (match === null) throw new SbxError('NOT_FOUND', 'no such route');
  const at = req.originalUrl.indexOf('?');
  return {
    sandboxId: decodeURIComponent(match[1] ?? ''),
    agentPath: dataplanePath(match[2] ?? '/'),
    query: at < 0 ? '' : req.originalUrl.slice(at),
  };
}

export function dataplaneRelayRoutes(deps: DataplaneRelayRoutesDeps): Router {
  const router = Router();
  router.all(/^\/v1\/sandboxes\/[^/]+\/dp\/.*/, async (req, res) => {
    const { sandboxId, agentPath, query } = split(req);
    const credential = bearerCredentialOf(req.get('authorization'));
    const { target, context } = await resolveRelay(deps, {
      sandboxId,
      credential,
      method: req.method,
      agentPath,
      requestId: requestIdOf(res),
      address: req.ip ?? req.socket.remoteAddress ?? 'unknown',
    });
    const outcome = await relayHttp(req, res, target, `${agentPath}${query}`);
    // The agent refused a kept token (its jti revoked): this caller's next call gets a new one.
    if (outcome.status === 401) deps.resources.retireRelayToken(target.jti);
    await deps.audit.record(
      'sandbox.relay',
      outcome.status < 400 ? 'ok' : `HTTP_${outcome.status}`,
      context,
      {
        sandboxId: target.sandbox.id,
        jti: target.jti,
        detail: { route: `dp${agentPath}`, method: req.method, status: outcome.status },
      },
    );
  });
  return router;
}
