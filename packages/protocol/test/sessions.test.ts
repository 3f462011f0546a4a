import { describe, expect, it } from '@jest/globals';
import {
  FullNegotiateBody,
  MvpNegotiateBody,
  NegotiateSessionRequest,
  type NegotiateSessionRequestInput,
  parseOrThrow,
  SbxError,
} from '../src/index.js';

function messages(input: unknown): string[] {
  const result = NegotiateSessionRequest.safeParse(input);
  expect(result.success).toBe(false);
  return result.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];
}

describe('POST /v1/sandbox/sessions request', () => {
  it('parses the MVP body into a thread scope', () => {
    expect(NegotiateSessionRequest.parse({ thread_id: 'thr_123', mode: 'ensure' })).toEqual({
      scope: { type: 'thread', id: 'thr_123' },
      mode: 'ensure',
      provider_preference: 'auto',
      mvp: true,
    });
  });

  it('normalizes the MVP mode get to attach_only', () => {
    expect(NegotiateSessionRequest.parse({ thread_id: 'thr_123', mode: 'get' }).mode).toBe('attach_only');
  });

  it('parses the full body and normalizes alias capabilities to canonical scopes', () => {
    const body: NegotiateSessionRequestInput = {
      scope: { type: 'thread', id: 'thr_123' },
      mode: 'ensure',
      actor: { type: 'human', id: 'usr_1' },
      requested_capabilities: ['fs_read', 'fs_write', 'shell', 'exec'],
      sandbox_hint: 'optional-existing-sandbox',
      provider_preference: 'auto',
    };
    expect(NegotiateSessionRequest.parse(body)).toEqual({
      scope: { type: 'thread', id: 'thr_123' },
      mode: 'ensure',
      actor: { type: 'human', id: 'usr_1' },
      requested_capabilities: ['fs:ro', 'fs:rw', 'shell', 'process'],
      sandbox_hint: 'optional-existing-sandbox',
      provider_preference: 'auto',
      mvp: false,
    });
  });

  it('de-duplicates an alias and its canonical name', () => {
    const req = NegotiateSessionRequest.parse({
      scope: { type: 'workspace', id: 'ws_1' },
      mode: 'ensure',
      requested_capabilities: ['fs:rw', 'fs_write', 'process', 'exec'],
    });
    expect(req.requested_capabilities).toEqual(['fs:rw', 'process']);
    expect(req.scope).toEqual({ type: 'workspace', id: 'ws_1' });
  });

  it('rejects an unknown capability with a message naming it', () => {
    const out = messages({ thread_id: 't1', mode: 'ensure', requested_capabilities: ['fs_read', 'root'] });
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^requested_capabilities\.1: unknown capability "root"/);
    expect(out[0]).toContain('fs:ro');
  });

  it('rejects an empty capability list (omit it for the policy default)', () => {
    expect(messages({ thread_id: 't1', mode: 'ensure', requested_capabilities: [] })[0]).toMatch(
      /at least one/,
    );
  });

  it('accepts thread_id together with the same thread scope', () => {
    const req = NegotiateSessionRequest.parse({
      thread_id: 't1',
      scope: { type: 'thread', id: 't1' },
      mode: 'get',
    });
    expect(req.scope).toEqual({ type: 'thread', id: 't1' });
  });

  it('rejects thread_id and a scope naming a different thread', () => {
    expect(messages({ thread_id: 't1', scope: { type: 'thread', id: 't2' }, mode: 'ensure' })).toEqual([
      'scope.id: thread_id "t1" and scope.id "t2" name different threads',
    ]);
  });

  it('rejects thread_id together with a non-thread scope', () => {
    expect(messages({ thread_id: 't1', scope: { type: 'workspace', id: 't1' }, mode: 'ensure' })[0]).toMatch(
      /scope\.type is "workspace"/,
    );
  });

  it('requires thread_id or scope, and a mode', () => {
    expect(messages({ mode: 'ensure' })).toEqual(['scope: either thread_id or scope is required']);
    expect(messages({ thread_id: 't1' })[0]).toMatch(/^mode:/);
    expect(messages({ thread_id: 't1', mode: 'create' })[0]).toMatch(/^mode:/);
  });

  it('accepts every mode in either shape (create_only with a bare thread_id too)', () => {
    for (const mode of ['get', 'ensure', 'attach_only', 'create_only'] as const) {
      expect(NegotiateSessionRequest.safeParse({ thread_id: 't1', mode }).success).toBe(true);
      expect(
        NegotiateSessionRequest.safeParse({ scope: { type: 'deployment', id: 'd1' }, mode }).success,
      ).toBe(true);
    }
    expect(NegotiateSessionRequest.parse({ thread_id: 't1', mode: 'create_only' }).mode).toBe('create_only');
  });

  it('rejects unknown keys so a typo is not silently ignored', () => {
    expect(messages({ thread_id: 't1', mode: 'ensure', requested_capabilites: ['shell'] })[0]).toMatch(
      /requested_capabilites/,
    );
  });

  it('rejects unknown scope and actor types and unsafe ids', () => {
    expect(messages({ scope: { type: 'org', id: 'o1' }, mode: 'ensure' })[0]).toMatch(/^scope\.type:/);
    expect(messages({ thread_id: 't1', mode: 'ensure', actor: { type: 'robot', id: 'r' } })[0]).toMatch(
      /^actor\.type:/,
    );
    expect(messages({ thread_id: '../etc', mode: 'ensure' })[0]).toMatch(/^thread_id:/);
    expect(messages({ thread_id: '', mode: 'ensure' })[0]).toMatch(/^thread_id: must not be empty/);
  });

  it('takes a provider preference other than auto, lower-case only', () => {
    expect(
      NegotiateSessionRequest.parse({ thread_id: 't', mode: 'ensure', provider_preference: 'e2b' }),
    ).toMatchObject({
      provider_preference: 'e2b',
    });
    expect(messages({ thread_id: 't', mode: 'ensure', provider_preference: 'E2B' })[0]).toMatch(
      /^provider_preference:/,
    );
  });

  it('rejects non-object bodies', () => {
    for (const body of [null, 'thread', [], 42])
      expect(NegotiateSessionRequest.safeParse(body).success).toBe(false);
  });

  it('turns a bad body into a 400 SbxError naming the field', () => {
    const err = ((): unknown => {
      try {
        return parseOrThrow(NegotiateSessionRequest, {
          thread_id: 't1',
          mode: 'ensure',
          requested_capabilities: ['sudo'],
        });
      } catch (caught) {
        return caught;
      }
    })();
    if (!(err instanceof SbxError)) throw new Error('expected an SbxError');
    expect(err.code).toBe('BAD_REQUEST');
    expect(err.status).toBe(400);
    expect(err.message).toMatch(
      /^invalid request body: requested_capabilities\.0: unknown capability "sudo"/,
    );
    expect(err.details).toEqual({ issues: [expect.objectContaining({ path: 'requested_capabilities.0' })] });
  });

  it('keeps the single-shape schemas for documentation', () => {
    expect(MvpNegotiateBody.safeParse({ thread_id: 't1', mode: 'ensure' }).success).toBe(true);
    expect(MvpNegotiateBody.safeParse({ thread_id: 't1', mode: 'create_only' }).success).toBe(false);
    expect(
      FullNegotiateBody.safeParse({ scope: { type: 'thread', id: 't1' }, mode: 'create_only' }).success,
    ).toBe(true);
    expect(FullNegotiateBody.safeParse({ thread_id: 't1', mode: 'ensure' }).success).toBe(false);
  });
});
