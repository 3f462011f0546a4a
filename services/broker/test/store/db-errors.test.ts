import { describe, expect, it } from '@jest/globals';
import { SbxError } from '@sbx/protocol';
import { openDatabase } from '../../src/store/database.js';
import { isUniqueViolation, toSbxError, violatedConstraint } from '../../src/store/db-errors.js';
import { SandboxRepository } from '../../src/store/sandbox-repository.js';

/** The shape Prisma 7 gives a constraint violation through a driver adapter. */
function prismaError(code: string, cause: Record<string, unknown>): Error {
  return Object.assign(new Error(`prisma ${code}`), {
    name: 'PrismaClientKnownRequestError',
    code,
    meta: { modelName: 'X', driverAdapterError: { name: 'DriverAdapterError', cause } },
  });
}

describe('toSbxError', () => {
  const byIndex = prismaError('P2002', {
    kind: 'UniqueConstraintViolation',
    constraint: { index: 'one_live' },
  });
  // pglite-prisma-adapter lists the columns instead; the name is in the message.
  const byFields = prismaError('P2002', {
    kind: 'UniqueConstraintViolation',
    constraint: { fields: ['a', 'b'] },
    originalMessage: 'duplicate key value violates unique constraint "one_live"',
  });

  it('names the violated constraint from either adapter', () => {
    expect(violatedConstraint(byIndex)).toBe('one_live');
    expect(violatedConstraint(byFields)).toBe('one_live');
    expect(isUniqueViolation(byFields, 'one_live')).toBe(true);
    expect(isUniqueViolation(byFields, 'other')).toBe(false);
  });

  it('maps a known constraint as configured and keeps the cause', () => {
    const err = toSbxError(byFields, 'bind', { one_live: { code: 'BINDING_CONFLICT', message: 'taken' } });
    expect(err).toMatchObject({
      code: 'BINDING_CONFLICT',
      message: 'taken',
      details: { constraint: 'one_live' },
    });
    expect(err.cause).toBe(byFields);
  });

  it('maps any other unique violation to CONFLICT', () => {
    expect(toSbxError(byIndex, 'create')).toMatchObject({ code: 'CONFLICT' });
  });

  it('maps connection trouble to BACKEND_UNAVAILABLE and the rest to INTERNAL', () => {
    expect(toSbxError(prismaError('P1001', {}), 'x').code).toBe('BACKEND_UNAVAILABLE');
    expect(toSbxError(prismaError('P2010', { kind: 'DatabaseNotReachable' }), 'x').code).toBe(
      'BACKEND_UNAVAILABLE',
    );
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(toSbxError(new Error('wrapped', { cause: refused }), 'x').code).toBe('BACKEND_UNAVAILABLE');
    const odd = prismaError('P2039', { kind: 'postgres', code: '23514' });
    const mapped = toSbxError(odd, 'update sandbox');
    expect(mapped).toMatchObject({ code: 'INTERNAL', message: 'update sandbox: database error' });
    expect(mapped.cause).toBe(odd);
    expect(toSbxError(new TypeError('boom'), 'x').code).toBe('INTERNAL');
  });

  it('passes an SbxError through', () => {
    const original = new SbxError('NOT_FOUND', 'gone');
    expect(toSbxError(original, 'x')).toBe(original);
  });

  it('reports a query against an unreachable Postgres as BACKEND_UNAVAILABLE, cause kept', async () => {
    const db = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:1/none', migrate: false });
    try {
      const failure = await new SandboxRepository(db.prisma)
        .findById('x', { tenantId: 't' })
        .catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(SbxError);
      expect(failure).toMatchObject({ code: 'BACKEND_UNAVAILABLE', retryable: true });
      expect((failure as SbxError).cause).toBeDefined();
    } finally {
      await db.close();
    }
  });
});
