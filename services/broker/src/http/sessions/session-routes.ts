// `/v1/sandbox/sessions…` (session seed): the MVP routes and the full ones on
// the same paths. MVP routes answer SESSION_* codes, the full ones BINDING_*;
// `POST /v1/sandbox/sessions` tells them apart by the body (`thread_id`: MVP).
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { EmptyBody, NegotiateSessionRequest, RefreshTokenRequest, SessionPathParams } from '@sbx/protocol';
import type { BindingLocator } from '../../domain/sessions/binding-locator.js';
import type { ErrorFamily } from '../../domain/sessions/session-errors.js';
import type { SessionService } from '../../domain/sessions/session-service.js';
import { bodyOf, callContext, idempotentJson, pathOf, rateLimit, type SessionHttpDeps } from './route-kit.js';
import { getBindingBody, heartbeatBody, refreshBody, sessionBody } from './session-presenter.js';

export interface SessionRoutesDeps extends SessionHttpDeps {
  readonly service: SessionService;
}

const SESSIONS = '/v1/sandbox/sessions';
const ONE = `${SESSIONS}/:session_id`;

function locatorOf(req: Request, family: ErrorFamily): BindingLocator {
  return { kind: 'id', id: pathOf(SessionPathParams, req).session_id, family };
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
      const session = await service.negotiate(callContext(res), request);
      return { status: 200, body: sessionBody(session), replayUntil: session.token.expiresAt };
    }),
  );

  router.get(ONE, authenticate, rateLimit(deps, 'session', 'session.get'), async (req, res) => {
    const session = await service.get(callContext(res), locatorOf(req, 'session'));
    res.json(getBindingBody(session));
  });

  const refresh =
    (family: ErrorFamily): RequestHandler =>
    async (req: Request, res: Response) => {
      const locator = locatorOf(req, family);
      const body = bodyOf(RefreshTokenRequest, req);
      const options = { capabilities: body.requested_capabilities };
      res.json(refreshBody(await service.refresh(callContext(res), locator, options)));
    };
  const refreshLimit = rateLimit(deps, 'session', 'session.refresh');
  router.post(`${ONE}/refresh`, authenticate, refreshLimit, refresh('session'));
  router.post(`${ONE}/refresh-token`, authenticate, refreshLimit, refresh('binding'));

  router.post(
    `${ONE}/heartbeat`,
    authenticate,
    rateLimit(deps, 'session', 'session.heartbeat'),
    async (req, res) => {
      const locator = locatorOf(req, 'binding');
      bodyOf(EmptyBody, req);
      res.json(heartbeatBody(await service.heartbeat(callContext(res), locator)));
    },
  );

  router.delete(ONE, authenticate, rateLimit(deps, 'session', 'session.release'), async (req, res) => {
    await service.release(callContext(res), locatorOf(req, 'session'));
    res.status(204).end();
  });

  return router;
}
