// The actor of a delegating token exchange (RFC 8693 §1.1, §4.1): the party
// the new token's `act` claim names, e.g. an agent working for the user whose
// token is the subject. The actor proves who it is with its own credential of
// the broker API (an API key or an OIDC access token, actor_token_type
// access_token), checked exactly as a caller's; an `act` is never taken on
// the requester's word. The actor must belong to the sandbox's tenant.
import { ACCESS_TOKEN_TYPE, SbxError, type TokenExchangeRequest } from '@sbx/protocol';
import type { CallerAuthenticator } from '../auth/authenticate-caller.js';
import type { Principal } from '../auth/principal.js';
import { OAuthError } from './oauth-error.js';

export interface ExchangeActorDeps {
  readonly actors: CallerAuthenticator;
}

export async function resolveExchangeActor(
  deps: ExchangeActorDeps,
  request: Pick<TokenExchangeRequest, 'actor_token' | 'actor_token_type'>,
  tenantId: string,
): Promise<Principal | undefined> {
  const { actor_token: token, actor_token_type: type } = request;
  if (token === undefined) {
    if (type !== undefined) throw new OAuthError('invalid_request', 'actor_token_type without actor_token');
    return undefined;
  }
  if (type !== ACCESS_TOKEN_TYPE) {
    throw new OAuthError('invalid_request', `actor_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  let actor: Principal;
  try {
    actor = await deps.actors.authenticate(`Bearer ${token}`);
  } catch (err) {
    // An identity provider we cannot reach is not the actor's fault: that stays a 503.
    if (SbxError.from(err).code !== 'UNAUTHENTICATED') throw err;
    throw new OAuthError('invalid_request', 'actor_token is not a valid credential', { cause: err });
  }
  if (actor.tenantId !== tenantId) {
    throw new OAuthError('invalid_request', "actor_token names an actor outside the sandbox's tenant");
  }
  return actor;
}
