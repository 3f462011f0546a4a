import { describe, expect, it } from '@jest/globals';
import { ERROR_CODES, ERROR_TABLE, ErrorCode, ErrorEnvelope, SbxError, httpStatusOf } from '../src/index.js';

describe('error codes', () => {
  it('gives every code an HTTP error status', () => {
    for (const code of ERROR_CODES) {
      const status = httpStatusOf(code);
      expect([code, status >= 400 && status <= 599]).toEqual([code, true]);
      expect(typeof ERROR_TABLE[code].retryable).toBe('boolean');
    }
  });

  it('holds the statuses of the documented error table', () => {
    const named: [ErrorCode, number][] = Object.entries({
      UNAUTHENTICATED: 401,
      FORBIDDEN: 403,
      CAPABILITY_DENIED: 403,
      SESSION_NOT_FOUND: 404,
      BINDING_NOT_FOUND: 404,
      SESSION_CONFLICT: 409,
      BINDING_CONFLICT: 409,
      SESSION_EXPIRED: 410,
      SANDBOX_STARTING: 423,
      RATE_LIMITED: 429,
      PROVIDER_UNAVAILABLE: 503,
      BACKEND_UNAVAILABLE: 503,
    } satisfies Partial<Record<ErrorCode, number>>).map(([code, status]) => [ErrorCode.parse(code), status]);
    for (const [code, status] of named) expect([code, httpStatusOf(code)]).toEqual([code, status]);
  });

  it('marks waiting-room and overload errors retryable', () => {
    for (const code of [
      'SANDBOX_STARTING',
      'RATE_LIMITED',
      'PROVIDER_UNAVAILABLE',
      'BACKEND_UNAVAILABLE',
    ] as const) {
      expect(ERROR_TABLE[code].retryable).toBe(true);
    }
    expect(ERROR_TABLE.CAPABILITY_DENIED.retryable).toBe(false);
  });

  it('parses the error envelope and rejects unknown codes', () => {
    const env = {
      error: {
        code: 'CAPABILITY_DENIED',
        message: 'shell not granted',
        retryable: false,
        request_id: 'req_123',
      },
    };
    expect(ErrorEnvelope.parse(env)).toEqual(env);
    expect(ErrorEnvelope.safeParse({ error: { ...env.error, code: 'TEAPOT' } }).success).toBe(false);
  });
});

describe('SbxError', () => {
  it('wraps an unknown throw as INTERNAL, keeping the cause but never leaking its message', () => {
    const cause = new Error('x');
    const err = SbxError.from(cause);
    expect(err.code).toBe('INTERNAL');
    expect(err.status).toBe(500);
    expect(err.cause).toBe(cause);
    const envelope = err.toEnvelope('req_1');
    expect(ErrorEnvelope.parse(envelope)).toEqual(envelope);
    expect(envelope.error.request_id).toBe('req_1');
    // No key or value of the envelope contains the letter x, so any trace of the cause would show.
    expect(JSON.stringify(envelope)).not.toContain('x');
    expect(Object.keys(envelope.error)).not.toContain('cause');
    expect(envelope.error.message).toBe('internal error');
  });

  it('does not leak a secret-looking cause either', () => {
    const envelope = SbxError.from(new Error('password=hunter2 at db.internal:5432')).toEnvelope();
    expect(JSON.stringify(envelope)).not.toContain('hunter2');
    expect(JSON.stringify(envelope)).not.toContain('db.internal');
  });

  it('passes an SbxError through unchanged', () => {
    const err = new SbxError('SANDBOX_STARTING', 'sandbox is starting', { retryAfterSeconds: 2 });
    expect(SbxError.from(err)).toBe(err);
    expect(err.toEnvelope()).toEqual({
      error: { code: 'SANDBOX_STARTING', message: 'sandbox is starting', retryable: true },
    });
  });
});
