// Token issuances: one row per token the broker mints, keyed by its jti, so a
// token can be traced (and, later, revoked) by the id it carries.
import type { Prisma, PrismaClient, TokenIssuance } from './generated/client.js';
import { guard } from './db-errors.js';

export type TokenIssuanceRecord = TokenIssuance;

export interface NewTokenIssuance {
  readonly jti: string;
  readonly subject: string;
  readonly audience: string;
  readonly scopes: readonly string[];
  readonly sessionId?: string | null;
  readonly threadId?: string | null;
  readonly requestId?: string | null;
  readonly issuedAt?: Date;
  readonly expiresAt: Date;
  /** The subject token's jti, for a token minted by token exchange. */
  readonly parentJti?: string | null;
  /** SHA-256 of an opaque token (D20); null for a JWT. */
  readonly tokenHash?: string | null;
}

/** The row an issuance becomes (also written in batches by the journal writer). */
export function issuanceRow(input: NewTokenIssuance): Prisma.TokenIssuanceCreateManyInput {
  return {
    jti: input.jti,
    subject: input.subject,
    audience: input.audience,
    scopes: [...input.scopes],
    sessionId: input.sessionId ?? null,
    threadId: input.threadId ?? null,
    requestId: input.requestId ?? null,
    ...(input.issuedAt === undefined ? {} : { issuedAt: input.issuedAt }),
    expiresAt: input.expiresAt,
    parentJti: input.parentJti ?? null,
    tokenHash: input.tokenHash ?? null,
  };
}

export const ISSUANCE_CONSTRAINTS = {
  token_issuances_pkey: { code: 'CONFLICT', message: 'a token with this jti was already issued' },
} as const;

export class TokenIssuanceRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** CONFLICT when the jti was already recorded. */
  record(input: NewTokenIssuance): Promise<TokenIssuanceRecord> {
    return guard(
      'record token issuance',
      () => this.prisma.tokenIssuance.create({ data: issuanceRow(input) }),
      ISSUANCE_CONSTRAINTS,
    );
  }

  /** The issuance an opaque token stands for, by the token's hash (D20). */
  findByTokenHash(tokenHash: string): Promise<TokenIssuanceRecord | null> {
    return guard('find token issuance', () => this.prisma.tokenIssuance.findUnique({ where: { tokenHash } }));
  }

  findByJti(jti: string): Promise<TokenIssuanceRecord | null> {
    return guard('find token issuance', () => this.prisma.tokenIssuance.findUnique({ where: { jti } }));
  }
}
