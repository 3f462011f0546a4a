// What revocation reads and writes (docs/security.md#revocation): the live tokens of a
// binding (token_issuances by session_id), a sandbox whatever its tenant (an admin
// revokes across tenants), and a sandbox's replaced signing key.
import type { PrismaClient } from './generated/client.js';
import { guard } from './db-errors.js';
import type { SandboxRecord } from './sandbox-repository.js';

/** A token still to be refused: its id, its sandbox (`aud`) and when it would expire anyway. */
export interface LiveToken {
  readonly jti: string;
  readonly audience: string;
  readonly expiresAt: Date;
}

export class RevocationStore {
  constructor(private readonly prisma: PrismaClient) {}

  /** The binding's tokens that have not expired at `now`. */
  liveTokensOfSession(sessionId: string, now: Date): Promise<LiveToken[]> {
    return guard('list session tokens', () =>
      this.prisma.tokenIssuance.findMany({
        where: { sessionId, expiresAt: { gt: now } },
        select: { jti: true, audience: true, expiresAt: true },
      }),
    );
  }

  /** One token by its jti, or null. */
  findToken(jti: string): Promise<LiveToken | null> {
    return guard('find token issuance', () =>
      this.prisma.tokenIssuance.findUnique({
        where: { jti },
        select: { jti: true, audience: true, expiresAt: true },
      }),
    );
  }

  /**
   * Marks tokens revoked (opaque tokens, D20: introspection answers `active: false` from then
   * on); `sandboxId` marks every live token of that sandbox.
   */
  async markRevoked(target: { jtis: readonly string[] } | { sandboxId: string }, at: Date): Promise<void> {
    const where =
      'sandboxId' in target
        ? { audience: target.sandboxId, expiresAt: { gt: at } }
        : { jti: { in: [...target.jtis] } };
    await guard('mark tokens revoked', () =>
      this.prisma.tokenIssuance.updateMany({ where: { ...where, revokedAt: null }, data: { revokedAt: at } }),
    );
  }

  /** Whether any binding ever had this id (a session without live tokens is still a session). */
  async sessionExists(sessionId: string): Promise<boolean> {
    const found = await guard('find session binding', () =>
      this.prisma.sessionBinding.findUnique({ where: { id: sessionId }, select: { id: true } }),
    );
    return found !== null;
  }

  /** A sandbox of any tenant (only admin callers reach this). */
  findSandbox(id: string): Promise<SandboxRecord | null> {
    return guard('find sandbox', () => this.prisma.sandbox.findUnique({ where: { id } }));
  }

  /** Stores a sandbox's new key (sealed by the KeyVault); later tokens are minted with it. */
  async replaceSigningKey(id: string, signingKeyCipher: Uint8Array<ArrayBuffer>): Promise<void> {
    await guard('replace sandbox signing key', () =>
      this.prisma.sandbox.update({ where: { id }, data: { signingKeyCipher } }),
    );
  }
}
