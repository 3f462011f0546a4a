// Token introspection (RFC 7662) of opaque tokens (docs/architecture.md D20): an agent
// shows a token it was handed and learns whether it is active and what it grants. The
// agent authenticates as its sandbox (client id = sandbox id, secret derived from the
// sandbox's key), and only ever learns about tokens of that sandbox: any other token,
// unknown, expired, revoked or a JWT, is `{active: false}` and nothing more.
import { checkIntrospectionSecret, isOpaqueToken, opaqueTokenHash } from '@sbx/tokens';
import type { KeyVault } from '../keys/key-vault.js';
import type { RevocationStore, TokenIssuanceRepository } from '../../store/index.js';
import { OAuthError } from './oauth-error.js';

export interface IntrospectionDeps {
  readonly sandboxes: Pick<RevocationStore, 'findSandbox'>;
  readonly issuances: Pick<TokenIssuanceRepository, 'findByTokenHash'>;
  readonly vault: Pick<KeyVault, 'openSigningKey'>;
  readonly issuer: string;
  readonly now: () => number;
}

export interface IntrospectionClient {
  readonly sandboxId: string;
  readonly secret: string;
}

export type IntrospectionAnswer =
  | { readonly active: false }
  | {
      readonly active: true;
      readonly scope: string;
      readonly token_type: 'Bearer';
      readonly client_id: string;
      readonly iss: string;
      readonly sub: string;
      readonly aud: string;
      readonly jti: string;
      readonly iat: number;
      readonly exp: number;
      readonly session_id?: string;
      readonly thread_id?: string;
    };

const INACTIVE = Object.freeze({ active: false as const });

/** 401 invalid_client unless `client` is a live sandbox presenting its own secret. */
async function authenticateClient(deps: IntrospectionDeps, client: IntrospectionClient): Promise<void> {
  const sandbox = await deps.sandboxes.findSandbox(client.sandboxId);
  const valid =
    sandbox !== null &&
    sandbox.state !== 'terminated' &&
    checkIntrospectionSecret(
      [deps.vault.openSigningKey(sandbox.id, sandbox.signingKeyCipher)],
      sandbox.id,
      client.secret,
    );
  if (!valid) throw new OAuthError('invalid_client', 'client authentication failed');
}

export async function introspect(
  deps: IntrospectionDeps,
  client: IntrospectionClient,
  token: string,
): Promise<IntrospectionAnswer> {
  await authenticateClient(deps, client);
  if (!isOpaqueToken(token)) return INACTIVE;
  const row = await deps.issuances.findByTokenHash(opaqueTokenHash(token));
  if (row === null || row.audience !== client.sandboxId) return INACTIVE;
  if (row.revokedAt !== null || row.expiresAt.getTime() <= deps.now()) return INACTIVE;
  return {
    active: true,
    scope: row.scopes.join(' '),
    token_type: 'Bearer',
    client_id: client.sandboxId,
    iss: deps.issuer,
    sub: row.subject,
    aud: row.audience,
    jti: row.jti,
    iat: Math.floor(row.issuedAt.getTime() / 1000),
    exp: Math.floor(row.expiresAt.getTime() / 1000),
    ...(row.sessionId === null ? {} : { session_id: row.sessionId }),
    ...(row.threadId === null ? {} : { thread_id: row.threadId }),
  };
}
