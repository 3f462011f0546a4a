// POST /oauth/introspect: RFC 7662 token introspection for agents in opaque-token mode
// (docs/protocol.md#opaque-tokens, docs/architecture.md D20). The body is a form with
// `token` (and optionally `token_type_hint`); the caller authenticates with HTTP Basic,
// its sandbox id as client id and the secret derived from its sandbox's key. Refusals
// leave in the RFC 6749 §5.2 shape like /oauth/token's; answers are never cached.
import express, { Router } from 'express';
import type { KeyVault } from '../../domain/keys/key-vault.js';
import { OAuthError } from '../../domain/tokens/oauth-error.js';
import { introspect, type IntrospectionClient } from '../../domain/tokens/introspection.js';
import type { Repositories } from '../../store/index.js';
import { noStore, oauthErrors, requireForm } from './token-routes.js';

export const INTROSPECTION_PATH = '/oauth/introspect';

export interface IntrospectionRoutesDeps {
  readonly repositories: Pick<Repositories, 'revocations' | 'tokens'>;
  readonly vault: KeyVault;
  readonly service: { readonly settings: { readonly tokenIssuer: string } };
  readonly clock: () => number;
}

/** The Basic credentials (RFC 6749 §2.3.1: both parts form-urlencoded), or 401 invalid_client. */
function clientOf(authorization: string | undefined): IntrospectionClient {
  const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(authorization ?? '');
  const pair = match?.[1] === undefined ? '' : Buffer.from(match[1], 'base64').toString('utf8');
  const colon = pair.indexOf(':');
  if (colon <= 0)
    throw new OAuthError('invalid_client', 'authenticate with HTTP Basic: sandbox id and secret');
  try {
    return {
      sandboxId: decodeURIComponent(pair.slice(0, colon)),
      secret: decodeURIComponent(pair.slice(colon + 1)),
    };
  } catch {
    throw new OAuthError('invalid_client', 'malformed client credentials');
  }
}

function tokenOf(body: unknown): string {
  const form: Record<string, unknown> = typeof body === 'object' && body !== null ? { ...body } : {};
  const token = form['token'];
  if (token === undefined) throw new OAuthError('invalid_request', 'token is missing');
  if (typeof token !== 'string') throw new OAuthError('invalid_request', 'token is repeated');
  if (token === '') throw new OAuthError('invalid_request', 'token is empty');
  return token;
}

export function introspectionRoutes(deps: IntrospectionRoutesDeps): Router {
  const introspection = {
    sandboxes: deps.repositories.revocations,
    issuances: deps.repositories.tokens,
    vault: deps.vault,
    issuer: deps.service.settings.tokenIssuer,
    now: deps.clock,
  };
  const router = Router();
  router.post(
    INTROSPECTION_PATH,
    noStore,
    requireForm,
    express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 8 }),
    oauthErrors(async (req, res) => {
      const client = clientOf(req.get('authorization'));
      const token = tokenOf(req.body);
      res.json(await introspect(introspection, client, token));
    }),
  );
  return router;
}
