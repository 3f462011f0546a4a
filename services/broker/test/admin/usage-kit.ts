// Rows with chosen timestamps for the usage tests (the fixture's clock is the real one).
import { randomUUID } from 'node:crypto';
import type { Broker } from './admin-kit.js';

/** A sandbox row created (in provisioning) at `createdAt`, of `tenantId`. */
export async function usageSandbox(broker: Broker, tenantId: string, createdAt: Date): Promise<string> {
  const id = `sbx_${randomUUID()}`;
  await broker.database.prisma.sandbox.create({
    data: {
      id,
      tenantId,
      ownerId: 'usr_usage',
      scopeType: 'thread',
      scopeId: `thr_${randomUUID()}`,
      provider: 'fake',
      signingKeyCipher: new Uint8Array(32),
      createdAt,
      lastHeartbeatAt: createdAt,
      leaseExpiresAt: createdAt,
      hardExpiresAt: createdAt,
    },
  });
  return id;
}

/** A released binding created at `createdAt`, with a token issued at each of `tokens`. */
export async function usageSession(
  broker: Broker,
  tenantId: string,
  sandboxId: string,
  createdAt: Date,
  tokens: readonly Date[],
): Promise<void> {
  const id = `ses_${randomUUID()}`;
  await broker.database.prisma.sessionBinding.create({
    data: {
      id,
      sandboxId,
      tenantId,
      ownerId: 'usr_usage',
      scopeType: 'thread',
      scopeId: `thr_${randomUUID()}`,
      actorType: 'agent',
      actorId: 'agt_usage',
      capabilities: [],
      live: null,
      createdAt,
    },
  });
  for (const issuedAt of tokens) {
    await broker.database.prisma.tokenIssuance.create({
      data: {
        jti: randomUUID(),
        subject: 'agt_usage',
        audience: sandboxId,
        scopes: [],
        sessionId: id,
        issuedAt,
        expiresAt: new Date(issuedAt.getTime() + 900_000),
      },
    });
  }
}
