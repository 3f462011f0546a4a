// The group-commit journal: rows queued together are written by few statements,
// each caller learns its own outcome, and a database that is down fails callers
// at once instead of row by row.
import { createHash, randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import type { PrismaClient } from '../../src/store/generated/client.js';
import { AuditRepository } from '../../src/store/audit-repository.js';
import { openDatabase } from '../../src/store/database.js';
import { JournalWriter } from '../../src/store/journal-writer.js';
import { TokenIssuanceRepository } from '../../src/store/token-issuance-repository.js';
import { describeEachBackend, useTestDatabase } from '../support/test-database.js';
import { uid } from './fixtures.js';

/** The real client, with its raw statements counted (what the writer sends per batch). */
function counting(prisma: PrismaClient): { prisma: PrismaClient; statements: () => number } {
  let statements = 0;
  const wrapped = new Proxy(prisma, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (name !== '$executeRawUnsafe' || typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        statements += 1;
        return Reflect.apply(value, target, args);
      };
    },
  });
  return { prisma: wrapped, statements: () => statements };
}

const issuance = (jti: string, sessionId: string) => ({
  jti,
  subject: 'usr_journal',
  audience: 'sbx_journal',
  scopes: ['fs:rw'],
  sessionId,
  expiresAt: new Date(Date.now() + 60_000),
});

describeEachBackend('journal writer', (backend) => {
  const db = useTestDatabase(backend);

  it('writes 50 concurrent rows with a few statements, each caller awaiting its own, in order', async () => {
    const { prisma, statements } = counting(db().prisma);
    const journal = new JournalWriter(prisma);
    const sessionId = uid('ses');
    await Promise.all(
      Array.from({ length: 25 }, (_v, i) => [
        journal.record(issuance(uid('jti'), sessionId)),
        journal.append({ action: `step.${i}`, outcome: 'ok', sessionId, scopes: ['shell'], detail: { i } }),
      ]).flat(),
    );
    expect(statements()).toBeLessThanOrEqual(3);
    const events = await new AuditRepository(db().prisma).listBySession(sessionId);
    expect(events.map((event) => event.action)).toEqual(Array.from({ length: 25 }, (_v, i) => `step.${i}`));
    expect(events[3]).toMatchObject({ outcome: 'ok', scopes: ['shell'], detail: { i: 3 } });
    const issued = await db().prisma.tokenIssuance.count({ where: { sessionId } });
    expect(issued).toBe(25);
  });

  it('lets rows of answered calls, written one after another, share commits; a row that waits goes first', async () => {
    const { prisma, statements } = counting(db().prisma);
    const journal = new JournalWriter(prisma);
    const sessionId = uid('ses');
    const soon: Promise<void>[] = [];
    // Five answered calls a couple of milliseconds apart, as a client's back-to-back commands.
    for (let i = 0; i < 5; i++) {
      soon.push(journal.appendSoon({ action: `relay.${i}`, outcome: 'ok', sessionId }));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await Promise.all(soon);
    // One statement when the five fit in a linger window; a loaded machine may need a few.
    expect(statements()).toBeLessThanOrEqual(3);
    // A row its caller waits for takes the lingering ones along at once.
    const lingering = journal.appendSoon({ action: 'relay.5', outcome: 'ok', sessionId });
    const before = statements();
    await journal.append({ action: 'negotiate', outcome: 'ok', sessionId });
    await lingering;
    expect(statements()).toBe(before + 1);
    const lingeringAtDrain = journal.appendSoon({ action: 'relay.6', outcome: 'ok', sessionId });
    await journal.drain();
    await lingeringAtDrain;
    const events = await new AuditRepository(db().prisma).listBySession(sessionId);
    expect(events.map((event) => event.action)).toEqual([
      ...Array.from({ length: 6 }, (_v, i) => `relay.${i}`),
      'negotiate',
      'relay.6',
    ]);
  });

  it('writes execute_code invocation rows with the others, and refuses only one the database refuses', async () => {
    const journal = new JournalWriter(db().prisma);
    const createdAt = new Date();
    const row = (days: number) => ({
      id: randomUUID(),
      createdAt,
      tenantId: uid('tenant'),
      agentId: 'agent-1',
      sessionId: null,
      sandboxId: null,
      scopeType: 'thread',
      scopeId: uid('thr'),
      language: 'bash',
      executedCodeHash: createHash('sha256').update('echo 1').digest('hex'),
      stdoutBytes: 300_000,
      stderrBytes: 0,
      stdoutTruncated: true,
      stderrTruncated: false,
      exitStatus: 'ok' as const,
      failureReason: null,
      durationMs: 9,
      purgeAfter: new Date(createdAt.getTime() + days * 86_400_000),
    });
    const [kept, tooLong] = [row(30), row(181)];
    const written = await Promise.allSettled([
      journal.recordInvocation(kept),
      journal.recordInvocation(tooLong),
    ]);
    expect(written.map((w) => w.status)).toEqual(['fulfilled', 'rejected']);
    const stored = await db().prisma.sandboxInvocation.findMany({
      where: { id: { in: [kept.id, tooLong.id] } },
    });
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      id: kept.id,
      stdoutBytes: 300_000n,
      stdoutTruncated: true,
      exitStatus: 'ok',
    });
  });

  it('fails only the bad row of a batch: a reused jti is CONFLICT, its neighbours are stored', async () => {
    const journal = new JournalWriter(db().prisma);
    const sessionId = uid('ses');
    const taken = uid('jti');
    await journal.record(issuance(taken, sessionId));
    const outcomes = await Promise.allSettled([
      journal.record(issuance(uid('jti'), sessionId)),
      journal.record(issuance(taken, sessionId)),
      journal.append({ action: 'after', outcome: 'ok', sessionId }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const refused = outcomes[1];
    expect(refused?.status === 'rejected' ? SbxError.from(refused.reason).code : '').toBe('CONFLICT');
    expect(await db().prisma.tokenIssuance.count({ where: { sessionId } })).toBe(2);
    expect(await new TokenIssuanceRepository(db().prisma).findByJti(taken)).not.toBeNull();
  });

  it('refuses beyond its queue limit with BACKEND_UNAVAILABLE, and drain waits for what is queued', async () => {
    const journal = new JournalWriter(db().prisma, { maxQueued: 3 });
    const sessionId = uid('ses');
    const queued = Array.from({ length: 3 }, (_v, i) =>
      journal.append({ action: `q.${i}`, outcome: 'ok', sessionId }),
    );
    await expect(journal.append({ action: 'q.over', outcome: 'ok', sessionId })).rejects.toMatchObject({
      code: 'BACKEND_UNAVAILABLE',
    });
    await journal.drain();
    const events = await new AuditRepository(db().prisma).listBySession(sessionId);
    expect(events.map((event) => event.action)).toEqual(['q.0', 'q.1', 'q.2']);
    await Promise.all(queued);
  });
});

describe('journal writer on a database that is down', () => {
  it('fails the whole batch at once with BACKEND_UNAVAILABLE instead of retrying row by row', async () => {
    // A Postgres URL where nothing listens: every statement fails to connect.
    const database = await openDatabase({
      databaseUrl: 'postgresql://postgres@127.0.0.1:1/none',
      migrate: false,
    });
    try {
      const { prisma, statements } = counting(database.prisma);
      const journal = new JournalWriter(prisma);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 20 }, (_v, i) => journal.append({ action: `down.${i}`, outcome: 'ok' })),
      );
      const codes = outcomes.map((outcome) =>
        outcome.status === 'rejected' ? SbxError.from(outcome.reason).code : 'stored',
      );
      expect(new Set(codes)).toEqual(new Set(['BACKEND_UNAVAILABLE']));
      expect(statements()).toBe(1);
    } finally {
      await database.close();
    }
  }, 60_000);
});
