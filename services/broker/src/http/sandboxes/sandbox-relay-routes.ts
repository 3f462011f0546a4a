// The sandbox resources' data plane, carried by the broker (docs/sandboxes.md "Relay"):
//   GET  /v1/sandboxes/{id}/files?path=   read:sandbox   → the agent's download (streamed)
//   POST /v1/sandboxes/{id}/files?path=   write:sandbox  → the agent's upload (streamed)
//   GET  /v1/sandboxes/{id}/logs          read:sandbox   → the agent's command log
//   POST /v1/sandboxes/{id}/commands      exec:sandbox   → the agent's exec, or a background process
// Each call gets a token the broker mints for it with the one capability the operation
// needs; the audit row of the call names that token's jti.
import { Router, type Request, type Response } from 'express';
import {
  ExecRequest,
  ProcessStartRequest,
  SandboxCommandRequest,
  SandboxFileQuery,
  SandboxPathParams,
  SbxError,
  parseOrThrow,
  type CapabilityScope,
} from '@sbx/protocol';
import { JSON_BODY_LIMIT_BYTES, readJsonBody, sendJsonText } from '@sbx/service-kit';
import type { AuditTrail } from '../../domain/audit/audit-trail.js';
import type { RelayTarget, SandboxResources } from '../../domain/sandboxes/sandbox-resources.js';
import { postJson } from '../../adapters/agent-http/post-json.js';
import { relayHttp } from '../../relay/index.js';
import { callContext, pathOf, rateLimit, type SessionHttpDeps } from '../sessions/route-kit.js';
import { needs } from './caller-scope.js';

export interface SandboxRelayRoutesDeps extends SessionHttpDeps {
  readonly resources: SandboxResources;
  readonly audit: AuditTrail;
}

const ONE = '/v1/sandboxes/:id';
/** The agent's exec timeout is 24 h at most; its answer comes when the program ends. */
const COMMAND_ANSWER_MS = 86_400_000 + 60_000;
/**
 * Bodies these routes read themselves, so no JSON parser may read them first: files and
 * data-plane calls stream to the agent, and a command is read by `readJsonBody`.
 */
export const RELAYED_BODY_PATHS = /^\/v1\/sandboxes\/[^/]+\/(files$|dp\/|commands$)/;

export function sandboxRelayRoutes(deps: SandboxRelayRoutesDeps): Router {
  const router = Router();
  const limit = rateLimit(deps, 'session', 'session.get');
  const target = (
    req: Request,
    res: Response,
    capability: CapabilityScope,
    options?: { readonly remembered?: boolean },
  ) => deps.resources.relayTarget(callContext(res), pathOf(SandboxPathParams, req).id, capability, options);
  // Every relayed call's row is written after its answer has left (or its stream ended).
  const audited = async (res: Response, relayed: RelayTarget, route: string, status: number) => {
    if (status === 401) deps.resources.retireRelayToken(relayed.jti);
    await deps.audit.recordAnswered(
      'sandbox.relay',
      status < 400 ? 'ok' : `HTTP_${status}`,
      callContext(res),
      {
        sandboxId: relayed.sandbox.id,
        jti: relayed.jti,
        detail: { route, status },
      },
    );
  };

  router.get(`${ONE}/files`, deps.authenticate, limit, needs('read:sandbox'), async (req, res) => {
    const { path } = parseOrThrow(SandboxFileQuery, { ...req.query }, 'query');
    const relayed = await target(req, res, 'fs:ro');
    const outcome = await relayHttp(req, res, relayed, `/v1/files/download?path=${encodeURIComponent(path)}`);
    await audited(res, relayed, 'files.download', outcome.status);
  });
  router.post(`${ONE}/files`, deps.authenticate, limit, needs('write:sandbox'), async (req, res) => {
    const { path } = parseOrThrow(SandboxFileQuery, { ...req.query }, 'query');
    const relayed = await target(req, res, 'fs:rw');
    const outcome = await relayHttp(req, res, relayed, `/v1/files/upload?path=${encodeURIComponent(path)}`);
    await audited(res, relayed, 'files.upload', outcome.status);
  });
  router.get(`${ONE}/logs`, deps.authenticate, limit, needs('read:sandbox'), async (req, res) => {
    const query = new URLSearchParams(req.url.split('?')[1] ?? '');
    const relayed = await target(req, res, 'fs:ro');
    const suffix = query.size === 0 ? '' : `?${query.toString()}`;
    const outcome = await relayHttp(req, res, relayed, `/v1/commands/log${suffix}`);
    await audited(res, relayed, 'logs', outcome.status);
  });
  router.post(`${ONE}/commands`, deps.authenticate, limit, needs('exec:sandbox'), async (req, res) => {
    const { background, body } = commandOf(await readJsonBody(req, JSON_BODY_LIMIT_BYTES));
    const payload = JSON.stringify(body);
    const send = (to: RelayTarget) =>
      postJson(
        new URL(`${to.httpBaseUrl}${background ? '/v1/processes' : '/v1/exec'}`),
        { authorization: `Bearer ${to.token}` },
        payload,
        COMMAND_ANSWER_MS,
      );
    let relayed = await target(req, res, 'process', { remembered: true });
    let answer = await send(relayed).catch((err: unknown) => unanswered(relayed, err));
    // A remembered address may be out of date (running-targets.ts), and a kept token may have
    // been revoked: neither a silent agent nor a refused token ran anything, so ask again
    // where the sandbox is now, with a token minted for this call.
    const stale = relayed.remembered === true || relayed.kept === true;
    if (answer === undefined || (stale && answer.status === 401)) {
      if (answer?.status === 401) deps.resources.retireRelayToken(relayed.jti);
      relayed = await target(req, res, 'process');
      answer = await send(relayed).catch((err: unknown) => unanswered(relayed, err));
      if (answer === undefined) throw agentSilent(undefined);
    }
    sendJsonText(res, answer.status, answer.text);
    // Recorded as the answer leaves (docs/sandboxes.md "Relay"): its commit is not part of
    // the call's latency; shutdown waits for the journal.
    await audited(res, relayed, background ? 'commands.background' : 'commands.run', answer.status);
  });
  return router;
}

const agentSilent = (cause: unknown) =>
  new SbxError('PROVIDER_UNAVAILABLE', 'the sandbox agent did not answer', { cause });

/** undefined when the address was remembered (worth asking again), else the error to answer. */
function unanswered(relayed: RelayTarget, err: unknown): undefined {
  if (relayed.remembered === true) return undefined;
  throw agentSilent(err);
}

/** `{background?: boolean, …}`: the rest is the agent's exec or process request, checked here. */
function commandOf(raw: unknown): { background: boolean; body: ExecRequest | ProcessStartRequest } {
  const { background, ...rest } = parseOrThrow(SandboxCommandRequest, raw);
  return background === true
    ? { background: true, body: parseOrThrow(ProcessStartRequest, rest) }
    : { background: false, body: parseOrThrow(ExecRequest, rest) };
}
