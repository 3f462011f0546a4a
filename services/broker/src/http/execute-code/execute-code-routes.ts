// execute_code for agents (docs/execute-code.md):
//   POST /v1/execute_code                                {thread_id | scope, code, language, timeout_ms?}
//   POST /v1/sandbox/sessions/{session_id}/execute_code  {code, language, timeout_ms?}
// 200 with the tool's result whenever the call was accepted, whatever became of the code
// (its sandbox_invocations row is written as the answer leaves); the error envelope otherwise.
import { Router, type Response } from 'express';
import {
  ExecuteCodeRequest,
  SessionExecuteCodeRequest,
  SessionPathParams,
  type ExecuteCodeResult,
} from '@sbx/protocol';
import type { ExecuteCodeService } from '../../domain/execute-code/execute-code-service.js';
import { bodyOf, callContext, pathOf, rateLimit, type SessionHttpDeps } from '../sessions/route-kit.js';

export interface ExecuteCodeRoutesDeps extends SessionHttpDeps {
  readonly executeCode: ExecuteCodeService;
}

/** A refusal that will pass: the client learns when, like a 429's Retry-After. */
function answer(res: Response, result: ExecuteCodeResult, now: number): void {
  if (result.resets_at !== undefined)
    res.set('Retry-After', String(Math.max(1, Math.ceil((Date.parse(result.resets_at) - now) / 1000))));
  res.set('Cache-Control', 'no-store');
  res.json(result);
}

export function executeCodeRoutes(deps: ExecuteCodeRoutesDeps, now: () => number): Router {
  const router = Router();
  const limit = rateLimit(deps, 'session', 'execute_code');

  router.post('/v1/execute_code', deps.authenticate, limit, async (req, res) => {
    const body = bodyOf(ExecuteCodeRequest, req);
    const scope = body.scope ?? { type: 'thread' as const, id: body.thread_id ?? '' };
    const { result, recorded } = await deps.executeCode.execute(
      callContext(res),
      { kind: 'scope', scope },
      body,
    );
    answer(res, result, now());
    await recorded;
  });

  router.post('/v1/sandbox/sessions/:session_id/execute_code', deps.authenticate, limit, async (req, res) => {
    const { session_id } = pathOf(SessionPathParams, req);
    const body = bodyOf(SessionExecuteCodeRequest, req);
    const { result, recorded } = await deps.executeCode.execute(
      callContext(res),
      { kind: 'session', sessionId: session_id },
      body,
    );
    answer(res, result, now());
    await recorded;
  });

  return router;
}
