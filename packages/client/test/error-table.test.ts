// The SDK's error classes against the protocol's code→status table: every row is checked
// through a real HTTP server on port 0, so a new code or status cannot be mapped by hand
// and forgotten.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ERROR_CODES, ERROR_TABLE, SbxError, type ErrorCode } from '@sbx/protocol';
import { BrokerClient, ERROR_CLASSES, ProtocolError, SbxClientError, clientError } from '../src/index.js';
import { startScriptedHttp, type ScriptedHttp } from './scripted-http.js';

const NO_RETRY = { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 };
const ROWS = Object.entries(ERROR_TABLE) as [ErrorCode, (typeof ERROR_TABLE)[ErrorCode]][];
const STATUSES = [...new Set(ROWS.map(([, row]) => row.status))];
let server: ScriptedHttp;
let broker: BrokerClient;

beforeAll(async () => {
  server = await startScriptedHttp({ status: 200, body: '' });
  broker = new BrokerClient({ baseUrl: server.url, apiKey: 'k', retry: NO_RETRY });
});
afterAll(() => server.close());

async function failureOf(status: number, body: string): Promise<SbxClientError> {
  server.answer = { status, body, contentType: 'application/json' };
  const failure = await broker.heartbeat('sess_1').then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(failure).toBeInstanceOf(SbxClientError);
  return failure as SbxClientError;
}

describe('the protocol error table', () => {
  it.each(ROWS)('an envelope with %s and its status is that class and code', async (code, { status }) => {
    const envelope = { error: { code, message: 'scripted', retryable: false, request_id: 'req_1' } };
    const error = await failureOf(status, JSON.stringify(envelope));
    expect(error).toBeInstanceOf(ERROR_CLASSES[code]);
    expect(error.constructor).toBe(ERROR_CLASSES[code]);
    expect(error.code).toBe(code);
    expect(error.name).toBe(ERROR_CLASSES[code].name);
    expect(error.httpStatus).toBe(status);
    expect(error.status).toBe(status);
    expect(error.message).toBe('heartbeat: scripted (request req_1)');
  });

  it.each(STATUSES)('HTTP %i without an envelope is a code of that status', async (status) => {
    const error = await failureOf(status, 'plain text from a proxy');
    expect(error).not.toBeInstanceOf(ProtocolError);
    expect(ERROR_TABLE[error.code].status).toBe(status);
    expect(error).toBeInstanceOf(ERROR_CLASSES[error.code]);
    expect(error.httpStatus).toBe(status);
  });

  it('a status outside the table without an envelope is a ProtocolError', async () => {
    const error = await failureOf(418, 'teapot');
    expect(error).toBeInstanceOf(ProtocolError);
  });
});

describe('error classes fix their own code', () => {
  it.each([...ERROR_CODES])('%s: the class says it, the constructor takes no code', (code) => {
    const ErrorClass = ERROR_CLASSES[code];
    expect(ErrorClass.code).toBe(code);
    const error = new ErrorClass('message', { httpStatus: 599 });
    expect(error.code).toBe(code);
    expect(error.message).toBe('message');
    expect(error.httpStatus).toBe(599);
    expect(error).toBeInstanceOf(SbxError);
    expect(clientError(code, 'm')).toBeInstanceOf(ErrorClass);
  });
});
