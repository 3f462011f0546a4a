// Thread routes (docs/protocol.md#thread-routes), on the same
// service as /v1/sandbox/sessions: the thread is the scope, the actor is the
// caller itself, and errors leave in the domain's own BINDING_* names (only the
// MVP routes rename them, in http/sessions/mvp-error-codes.ts).
//   POST   /threads/{thread_id}/sandbox            negotiate (ensure)
//   POST   /threads/{thread_id}/sandbox/refresh    new token; current_token proves possession
//   POST   /threads/{thread_id}/sandbox/heartbeat  extend the lease
//   DELETE /threads/{thread_id}/sandbox            release the caller's binding
import { Router } from 'express';
import {
  ThreadHeartbeatRequest,
  ThreadPathParams,
  ThreadRefreshRequest,
  ThreadSandboxRequest,
} from '@sbx/protocol';
import type { SessionService } from '../../domain/sessions/session-service.js';
import {
  bodyOf,
  callContext,
  idempotentJson,
  pathOf,
  rateLimit,
  type SessionHttpDeps,
} from '../sessions/route-kit.js';
import { threadHeartbeatBody, threadRefreshBody, threadSandboxBody } from '../sessions/session-presenter.js';

export interface ThreadRoutesDeps extends SessionHttpDeps {
  readonly service: SessionService;
}

const SANDBOX = '/threads/:thread_id/sandbox';

export function threadRoutes(deps: ThreadRoutesDeps): Router {
  const { service, authenticate } = deps;
  const router = Router();

  router.post(
    SANDBOX,
    authenticate,
    rateLimit(deps, 'negotiate', 'session.negotiate'),
    idempotentJson(deps.idempotency, async (req, res) => {
      const { thread_id } = pathOf(ThreadPathParams, req);
      const body = bodyOf(ThreadSandboxRequest, req);
      const session = await service.negotiate(
        callContext(res),
        {
          scope: { type: 'thread', id: thread_id },
          mode: 'ensure',
          requested_capabilities: body.scopes,
          ...(body.sandbox_id === undefined ? {} : { sandbox_hint: body.sandbox_id }),
          provider_preference: 'auto',
          mvp: false,
        },
        { ttlSeconds: body.ttl },
      );
      return { status: 200, body: threadSandboxBody(session), replayUntil: session.token.expiresAt };
    }),
  );

  router.post(
    `${SANDBOX}/refresh`,
    authenticate,
    rateLimit(deps, 'session', 'session.refresh'),
    async (req, res) => {
      const { thread_id } = pathOf(ThreadPathParams, req);
      const body = bodyOf(ThreadRefreshRequest, req);
      const locator = { kind: 'thread', threadId: thread_id, sandboxId: body.sandbox_id } as const;
      const session = await service.refresh(callContext(res), locator, { currentToken: body.current_token });
      res.json(threadRefreshBody(session));
    },
  );

  router.post(
    `${SANDBOX}/heartbeat`,
    authenticate,
    rateLimit(deps, 'session', 'session.heartbeat'),
    async (req, res) => {
      const { thread_id } = pathOf(ThreadPathParams, req);
      const body = bodyOf(ThreadHeartbeatRequest, req);
      const locator = { kind: 'thread', threadId: thread_id, sandboxId: body.sandbox_id } as const;
      res.json(threadHeartbeatBody(await service.heartbeat(callContext(res), locator)));
    },
  );

  router.delete(SANDBOX, authenticate, rateLimit(deps, 'session', 'session.release'), async (req, res) => {
    const { thread_id } = pathOf(ThreadPathParams, req);
    await service.release(callContext(res), { kind: 'thread', threadId: thread_id });
    res.status(204).end();
  });

  return router;
}
