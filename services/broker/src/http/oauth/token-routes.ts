// POST /oauth/token: RFC 8693 token exchange (docs/protocol.md#token-exchange).
// The body is a form (application/x-www-form-urlencoded, each parameter once);
// the answer is JSON with `Cache-Control: no-store`. Refusals of the exchange
// leave in the RFC 6749 §5.2 shape (`{error, error_description}`), which OAuth
// clients parse; a rate limit (429) or an unavailable backend (5xx) leaves in
// the broker's own envelope, like on every route (docs/architecture.md D19).
// No caller authentication: the subject token is the credential, and the
// exchange can only narrow what its holder already has.
import express, { Router, type Request, type RequestHandler, type Response } from 'express';
import { SbxError, TOKEN_EXCHANGE_GRANT_TYPE, TokenExchangeRequest } from '@sbx/protocol';
import { requestIdOf } from '@sbx/service-kit';
import type { AuditTrail } from '../../domain/audit/audit-trail.js';
import { createCallerAuthenticator } from '../../domain/auth/authenticate-caller.js';
import type { OidcVerifier } from '../../domain/auth/oidc-verifier.js';
import type { KeyVault } from '../../domain/keys/key-vault.js';
import type { AuthFailureLimiter } from '../../domain/rate-limit/auth-failure-limiter.js';
import type { RateLimiter } from '../../domain/rate-limit/rate-limiter.js';
import { OAuthError } from '../../domain/tokens/oauth-error.js';
import { exchangeToken, type TokenExchangeDeps } from '../../domain/tokens/token-exchange.js';
import type { Repositories } from '../../store/index.js';
import type { TokenFormat } from '@sbx/tokens';

export const TOKEN_PATH = '/oauth/token';
const FORM = 'application/x-www-form-urlencoded';

export interface TokenRoutesDeps {
  readonly repositories: Pick<Repositories, 'apiKeys' | 'bindings' | 'sandboxes' | 'journal' | 'tokens'>;
  readonly vault: KeyVault;
  readonly audit: AuditTrail;
  /** Actor tokens are checked as caller credentials are: API keys, and OIDC tokens when configured. */
  readonly oidc: OidcVerifier | undefined;
  readonly service: {
    readonly settings: { readonly tokenIssuer: string; readonly tokenFormat: TokenFormat };
  };
  readonly clock: () => number;
  readonly rateLimiter: RateLimiter;
  /** Refused actor credentials count per address as refused caller credentials do (429 past the limit). */
  readonly authFailureLimiter?: AuthFailureLimiter | undefined;
}

export function tokenRoutes(deps: TokenRoutesDeps): Router {
  const { repositories } = deps;
  const exchange: TokenExchangeDeps = {
    bindings: repositories.bindings,
    sandboxes: repositories.sandboxes,
    vault: deps.vault,
    issuances: repositories.journal,
    audit: deps.audit,
    actors: createCallerAuthenticator({ apiKeys: repositories.apiKeys, oidc: deps.oidc }),
    issuer: deps.service.settings.tokenIssuer,
    now: deps.clock,
    issuanceRows: repositories.tokens,
    format: deps.service.settings.tokenFormat,
  };
  const router = Router();
  router.post(
    TOKEN_PATH,
    noStore,
    rateLimitByAddress(deps.rateLimiter),
    requireForm,
    express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 32 }),
    oauthErrors(async (req, res) => {
      const request = parseForm(req.body);
      const address = req.ip ?? 'unknown';
      try {
        res.json(await exchangeToken(exchange, request, requestIdOf(res)));
      } catch (err) {
        const limited = refusedActor(err) ? await deps.authFailureLimiter?.recordFailure(address) : undefined;
        throw limited ?? err;
      }
    }),
  );
  return router;
}

/** RFC 6749 §5.1: token responses are never cached, refusals included. */
export const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  next();
};

/** Anyone may call: each client address counts in the `session` bucket (429 in the broker's envelope). */
function rateLimitByAddress(limiter: RateLimiter): RequestHandler {
  return async (req, _res, next) => {
    const verdict = await limiter.take('session', {
      tenantId: 'oauth',
      principalId: `ip:${req.ip ?? 'unknown'}`,
    });
    if (!verdict.allowed) throw verdict.error;
    next();
  };
}

export const requireForm = oauthErrors((req, _res, next) => {
  if (req.is(FORM) !== FORM) throw new OAuthError('invalid_request', `the request body must be ${FORM}`);
  next();
});

function parseForm(body: unknown): TokenExchangeRequest {
  const form: Record<string, unknown> = typeof body === 'object' && body !== null ? { ...body } : {};
  const grant = form['grant_type'];
  if (typeof grant === 'string' && grant !== TOKEN_EXCHANGE_GRANT_TYPE) {
    throw new OAuthError('unsupported_grant_type', `grant_type must be ${TOKEN_EXCHANGE_GRANT_TYPE}`);
  }
  const parsed = TokenExchangeRequest.safeParse(form);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const name = issue?.path.map(String).join('.') ?? '';
  const value = form[name];
  const problem =
    value === undefined
      ? 'is missing'
      : Array.isArray(value)
        ? 'is repeated'
        : `is invalid: ${issue?.message}`;
  throw new OAuthError('invalid_request', name === '' ? 'invalid request' : `${name} ${problem}`);
}

/** An actor_token that did not authenticate (a guessed API key, say), not any other refusal. */
const refusedActor = (err: unknown): boolean =>
  err instanceof OAuthError && err.cause instanceof SbxError && err.cause.code === 'UNAUTHENTICATED';

type Handler = (req: Request, res: Response, next: () => void) => void | Promise<void>;

/** OAuthError → its status and RFC body; anything else to the broker's error middleware. */
export function oauthErrors(handler: Handler): RequestHandler {
  return async (req, res, next) => {
    try {
      await handler(req, res, next);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      if (err.status === 401) res.setHeader('WWW-Authenticate', 'Basic');
      res.status(err.status).json(err.toJSON());
    }
  };
}
