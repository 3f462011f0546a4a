import { describe, expect, it } from '@jest/globals';
import {
  FullSessionResponse,
  GetBindingResponse,
  HeartbeatResponse,
  MvpRefreshResponse,
  MvpSessionResponse,
  RefreshTokenResponse,
  SessionResponse,
  toGetBindingResponse,
  toRefreshTokenResponse,
  toSessionResponse,
} from '../src/index.js';
import { fullThreadResponse } from './fixtures.js';

describe('session responses', () => {
  it('parses an MVP response', () => {
    const mvp = {
      session_id: 'ssn_123',
      thread_id: 'thr_123',
      sandbox: {
        id: 'sb_123',
        provider: 'langsmith',
        http_base_url: 'https://dp.example.com/v1',
        ws_base_url: 'wss://dp.example.com/v1',
        workspace_path: '/workspace',
      },
      token: 'opaque_or_jwt_token',
      expires_at: '2026-02-27T20:20:00Z',
    };
    expect(MvpSessionResponse.parse(mvp)).toEqual(mvp);
  });

  it('parses a full response, alias capabilities coming out canonical', () => {
    const seed = fullThreadResponse();
    const raw = {
      ...seed,
      credentials: { ...seed.credentials, granted_capabilities: ['fs_read', 'fs_write', 'shell'] },
    };
    expect(FullSessionResponse.parse(raw).credentials.granted_capabilities).toEqual([
      'fs:ro',
      'fs:rw',
      'shell',
    ]);
  });

  it('builds a combined response that an MVP client parses (the combined response is a superset)', () => {
    // A fake broker's literal: what goes over the wire.
    const wire: unknown = JSON.parse(JSON.stringify(toSessionResponse(fullThreadResponse())));
    expect(SessionResponse.parse(wire)).toEqual(wire);
    // And at the type level: a combined response is a full response.
    const asFull: FullSessionResponse = SessionResponse.parse(wire);
    expect(asFull.binding.id).toBe('bind_789');
    expect(FullSessionResponse.safeParse(wire).success).toBe(true);
    expect(MvpSessionResponse.parse(wire)).toEqual({
      session_id: 'bind_789',
      thread_id: 'thr_123',
      sandbox: {
        id: 'sb_123',
        provider: 'langsmith',
        http_base_url: 'https://dp.example.com/v1',
        ws_base_url: 'wss://dp.example.com/v1',
        workspace_path: '/workspace',
      },
      token: 'short_lived_token',
      expires_at: '2026-02-27T20:20:00Z',
    });
  });

  it('parses a hand-written fake-broker literal with the combined, full and MVP schemas', () => {
    const literal = {
      session_id: 'bind_1',
      thread_id: 'thr_1',
      sandbox: {
        id: 'sb_1',
        provider: 'local',
        http_base_url: 'http://127.0.0.1:8081',
        ws_base_url: 'ws://127.0.0.1:8081',
        workspace_path: '/workspace',
      },
      token: 'tok',
      expires_at: '2026-02-27T20:20:00Z',
      binding: {
        id: 'bind_1',
        scope: { type: 'thread', id: 'thr_1' },
        sandbox_id: 'sb_1',
        provider: 'local',
        state: 'provisioning',
        lease_expires_at: '2026-02-27T21:00:00Z',
      },
      dataplane: {
        http_base_url: 'http://127.0.0.1:8081',
        ws_base_url: 'ws://127.0.0.1:8081',
        workspace_path: '/workspace',
      },
      credentials: {
        token_type: 'Bearer',
        access_token: 'tok',
        expires_at: '2026-02-27T20:20:00Z',
        granted_capabilities: ['process', 'fs:rw'],
      },
      policy: { idle_timeout_seconds: 900, hard_ttl_seconds: 28800 },
    };
    expect(SessionResponse.safeParse(literal).success).toBe(true);
    expect(FullSessionResponse.parse(literal).credentials.granted_capabilities).toEqual(['fs:rw', 'process']);
    const { binding: _b, dataplane: _d, credentials: _c, policy: _p, ...mvpOnly } = literal;
    expect(MvpSessionResponse.parse(literal)).toEqual(mvpOnly);
  });

  it('omits thread_id for a non-thread scope and rejects one that is given', () => {
    const full = fullThreadResponse();
    full.binding.scope = { type: 'workspace', id: 'ws_1' };
    const combined = toSessionResponse(full);
    expect('thread_id' in combined).toBe(false);
    expect(SessionResponse.safeParse(combined).success).toBe(true);
    expect(SessionResponse.safeParse({ ...combined, thread_id: 'ws_1' }).success).toBe(false);
  });

  it('rejects a combined response whose MVP mirrors disagree with the full fields', () => {
    const good = toSessionResponse(fullThreadResponse());
    const bad = [
      { ...good, token: 'other' },
      { ...good, session_id: 'other' },
      { ...good, thread_id: 'thr_other' },
      { ...good, expires_at: '2026-02-27T20:21:00Z' },
      {
        ...good,
        sandbox: {
          ...good.sandbox,
          ws_base_url: 'wss://elsewhere.example.com',
          workspace_path: '/workspace',
        },
      },
    ];
    for (const body of bad) expect(SessionResponse.safeParse(body).success).toBe(false);
    const { thread_id: _dropped, ...noThread } = good;
    expect(SessionResponse.safeParse(noThread).error?.issues[0]?.path).toEqual(['thread_id']);
  });

  it('rejects wrong token types, states and isolation modes', () => {
    const good = fullThreadResponse();
    expect(
      FullSessionResponse.safeParse({ ...good, credentials: { ...good.credentials, token_type: 'bearer' } })
        .success,
    ).toBe(false);
    expect(
      FullSessionResponse.safeParse({ ...good, binding: { ...good.binding, state: 'running' } }).success,
    ).toBe(false);
    expect(
      FullSessionResponse.safeParse({ ...good, policy: { ...good.policy, isolation: 'vm' } }).success,
    ).toBe(false);
    expect(
      FullSessionResponse.safeParse({ ...good, policy: { idle_timeout_seconds: 0, hard_ttl_seconds: 1 } })
        .success,
    ).toBe(false);
  });

  it('tolerates fields a newer server adds', () => {
    const wire = { ...toSessionResponse(fullThreadResponse()), region: 'eu' };
    expect(SessionResponse.safeParse(wire).success).toBe(true);
  });

  it('builds a GET binding response without credentials', () => {
    const { binding, dataplane, policy } = fullThreadResponse();
    const view = toGetBindingResponse({ binding, dataplane, policy });
    expect(GetBindingResponse.parse(view)).toEqual(view);
    expect(JSON.stringify(view)).not.toContain('short_lived_token');
    expect(view.session_id).toBe('bind_789');
  });

  it('answers both refresh routes with one shape that MVP clients read as {token, expires_at}', () => {
    const refreshed = toRefreshTokenResponse(fullThreadResponse().credentials);
    expect(RefreshTokenResponse.parse(refreshed)).toEqual(refreshed);
    expect(MvpRefreshResponse.parse(refreshed)).toEqual({
      token: 'short_lived_token',
      expires_at: '2026-02-27T20:20:00Z',
    });
    expect(RefreshTokenResponse.safeParse({ ...refreshed, token: 'x' }).success).toBe(false);
    expect(MvpRefreshResponse.safeParse({ token: 'x', expires_at: 'soon' }).success).toBe(false);
  });

  it('parses heartbeat responses', () => {
    expect(HeartbeatResponse.parse({ lease_expires_at: '2026-02-27T21:00:00Z', state: 'idle' }).state).toBe(
      'idle',
    );
    expect(HeartbeatResponse.safeParse({ lease_expires_at: '2026-02-27T21:00:00Z' }).success).toBe(false);
  });
});
