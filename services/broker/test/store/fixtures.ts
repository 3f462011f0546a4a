import { randomUUID } from 'node:crypto';
import type { NewSandbox } from '../../src/store/sandbox-repository.js';

/** A unique id, so tests sharing one database never collide. */
export function uid(prefix = 'id'): string {
  return `${prefix}_${randomUUID()}`;
}

export function newSandbox(overrides: Partial<NewSandbox> = {}): NewSandbox {
  const now = Date.now();
  return {
    id: uid('sbx'),
    tenantId: uid('tenant'),
    ownerId: uid('owner'),
    scopeType: 'thread',
    scopeId: uid('thread'),
    provider: 'local',
    signingKeyCipher: new Uint8Array([1, 2, 3, 4]),
    leaseExpiresAt: new Date(now + 60_000),
    hardExpiresAt: new Date(now + 3_600_000),
    ...overrides,
  };
}
