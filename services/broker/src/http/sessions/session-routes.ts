// `/v1/sandbox/sessions…` (docs/protocol.md#route-families): the MVP routes and the full ones on
// the same paths, on one service that speaks bindings (BINDING_* errors). The
// MVP routes rename those errors to their SESSION_* codes here and only here
// (mvp-error-codes.ts): `POST /v1/sandbox/sessions` with an MVP body
// (`thread_id`), `GET` and `DELETE` by id, and `…/refresh`. The full routes
// (`POST` with `scope`, `…/refresh-token`, `…/heartbeat`) answer as the domain does.
import { Router, type Request, type Response } from 'express';
import { EmptyBody, NegotiateSessionRequest, RefreshTokenRequest, SessionPathParams } from '@sbx/protocol';
import type { BindingLocator } from '../../domain/sessions/binding-locator.js';
import type { SessionService } from '../../domain/sessions/session-service.js';
import { inMvpTerms, mvpRoute } from './mvp-error-codes.js';
import { bodyOf, callContext, idempotentJson, pathOf, rateLimit, type SessionHttpDeps } from './route-kit.js';
import { getBindingBody, heartbeatBody, refreshBody, sessionBody } from './session-presenter.js';

export interface SessionRoutesDeps extends SessionHttpDeps {
  readonly service: SessionService;
}

const SESSIONS = '/v1/sandbox/sessions';
const ONE = `${SESSIONS}/:session_id`;

/** The binding a by-id route names: the MVP's `session_id` is the binding's id. */
function locatorOf(req: Request): BindingLocator {
  return { kind: 'id', id: pathOf(SessionPathParams, req).session_id };
}

export function sessionRoutes(deps: SessionRoutesDeps): Router {
  const { service, authenticate } = deps;
  const router = Router();

  router.post(
    SESSIONS,
    authenticate,
    rateLimit(deps, 'negotiate', 'session.negotiate'),
    idempotentJson(deps.idempotency, async (req, res) => {
      const request = bodyOf(NegotiateSessionRequest, req);
      const negotiation = () => service.negotiate(callContext(res), request);
      const session = await (request.mvp ? inMvpTerms(negotiation) : negotiation());
      return { status: 200, body: sessionBody(session), replayUntil: session.token.expiresAt };
    }),
  );

  router.get(
    ONE,
    authenticate,
    rateLimit(deps, 'session', 'session.get'),
    mvpRoute(async (req, res) => {
      const session = await service.get(callContext(res), locatorOf(req));
      res.json(getBindingBody(session));
    }),
  );

  const refresh = async (req: Request, res: Response) => {
    const locator = locatorOf(req);
    const body = bodyOf(RefreshTokenRequest, req);
    const options = { capabilities: body.requested_capabilities };
    res.json(refreshBody(await service.refresh(callContext(res), locator, options)));
  };
  const refreshLimit = rateLimit(deps, 'session', 'session.refresh');
  router.post(`${ONE}/refresh`, authenticate, refreshLimit, mvpRoute(refresh));
  router.post(`${ONE}/refresh-token`, authenticate, refreshLimit, refresh);

  router.post(
    `${ONE}/heartbeat`,
    authenticate,
    rateLimit(deps, 'session', 'session.heartbeat'),
    async (req, res) => {
      const locator = locatorOf(req);
      bodyOf(EmptyBody, req);
      res.json(heartbeatBody(await service.heartbeat(callContext(res), locator)));
    },
  );

  router.delete(
    ONE,
    authenticate,
    rateLimit(deps, 'session', 'session.release'),
    mvpRoute(async (req, res) => {
      await service.release(callContext(res), locatorOf(req));
      res.status(204).end();
    }),
  );

  return router;
}
