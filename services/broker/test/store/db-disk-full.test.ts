// A database out of disk space (SQLSTATE 53100 disk_full, from Postgres or from PGlite on
// the broker's data directory; ENOSPC from the embedded database's own files) is 507
// INSUFFICIENT_STORAGE naming the broker's database, not 500 INTERNAL. Found by
// reliability/disk/host-full.test.ts (finding D2), which also checks that the database
// stays usable and keeps every row.
import { describe, expect, it } from '@jest/globals';
import { toSbxError } from '../../src/store/db-errors.js';

/** What Prisma 7 gives for a failed statement through a driver adapter. */
function prismaError(cause: Record<string, unknown>): Error {
  return Object.assign(new Error('Invalid `prisma.apiKey.create()` invocation'), {
    name: 'PrismaClientKnownRequestError',
    code: 'P2039',
    meta: { modelName: 'ApiKey', driverAdapterError: { name: 'DriverAdapterError', cause } },
  });
}

const message = 'could not extend file "base/5/16547": No space left on device';

describe('toSbxError on a full disk', () => {
  it.each([
    // As pglite-prisma-adapter reported it on a full disk (reliability/disk).
    [
      'PGlite',
      prismaError({ originalCode: '53100', originalMessage: message, kind: 'postgres', code: '53100' }),
    ],
    // adapter-pg passes an unmapped SQLSTATE on the same way.
    ['Postgres', prismaError({ kind: 'postgres', code: '53100', message, severity: 'ERROR' })],
    [
      'a file of the embedded database',
      new Error('could not lock', {
        cause: Object.assign(new Error('ENOSPC: no space left on device, open'), { code: 'ENOSPC' }),
      }),
    ],
  ])('maps %s out of space to 507 INSUFFICIENT_STORAGE, cause kept', (_label, err) => {
    const mapped = toSbxError(err, 'create api key');
    expect(mapped).toMatchObject({
      code: 'INSUFFICIENT_STORAGE',
      status: 507,
      retryable: false,
      message: "create api key: the broker's database is out of disk space",
    });
    expect(mapped.cause).toBe(err);
  });

  it('leaves other resource errors alone', () => {
    expect(toSbxError(prismaError({ kind: 'postgres', code: '53200' }), 'x').code).toBe('INTERNAL');
  });
});
