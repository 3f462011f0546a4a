import { describe, expect, it } from '@jest/globals';
import {
  MAX_REQUESTED_TTL_SECONDS,
  ThreadHeartbeatRequest,
  ThreadHeartbeatResponse,
  ThreadPathParams,
  ThreadRefreshRequest,
  ThreadRefreshResponse,
  ThreadSandboxRequest,
  ThreadSandboxResponse,
} from '../src/index.js';

describe('thread routes', () => {
  it('parses a negotiation body with sandbox_id, scopes and ttl', () => {
    expect(
      ThreadSandboxRequest.parse({ sandbox_id: 'sbx_abc123', scopes: ['fs:rw', 'shell'], ttl: 900 }),
    ).toEqual({
      sandbox_id: 'sbx_abc123',
      scopes: ['fs:rw', 'shell'],
      ttl: 900,
    });
  });

  it('accepts aliases in scopes and normalizes them', () => {
    expect(ThreadSandboxRequest.parse({ scopes: ['exec', 'fs_read'] }).scopes).toEqual(['fs:ro', 'process']);
  });

  it('rejects missing, empty or unknown scopes', () => {
    expect(ThreadSandboxRequest.safeParse({}).success).toBe(false);
    expect(ThreadSandboxRequest.safeParse({ scopes: [] }).success).toBe(false);
    expect(ThreadSandboxRequest.safeParse({ scopes: ['snapshot'] }).error?.issues[0]?.message).toMatch(
      /unknown capability "snapshot"/,
    );
  });

  it('requires ttl to be a positive whole number of seconds within the bound', () => {
    for (const ttl of [0, -5, 1.5, '900', MAX_REQUESTED_TTL_SECONDS + 1]) {
      expect([ttl, ThreadSandboxRequest.safeParse({ scopes: ['shell'], ttl }).success]).toEqual([ttl, false]);
    }
    expect(
      ThreadSandboxRequest.safeParse({ scopes: ['shell'], ttl: MAX_REQUESTED_TTL_SECONDS }).success,
    ).toBe(true);
  });

  it('parses a negotiation response', () => {
    const res = {
      sandbox_id: 'sbx_abc123',
      endpoints: {
        http: 'https://sbx-abc123.sandboxes.example.com',
        ws: 'wss://sbx-abc123.sandboxes.example.com/ws',
      },
      token: '<signed-capability-token>',
      expires_at: '2026-02-26T12:15:00Z',
      scopes: ['fs:rw', 'shell'],
      refresh_before: '2026-02-26T12:10:00Z',
    };
    expect(ThreadSandboxResponse.parse(res)).toEqual(res);
    expect(ThreadSandboxResponse.safeParse({ ...res, refresh_before: '2026-02-26T12:20:00Z' }).success).toBe(
      false,
    );
    expect(
      ThreadSandboxResponse.safeParse({
        ...res,
        endpoints: { http: res.endpoints.ws, ws: res.endpoints.http },
      }).success,
    ).toBe(false);
  });

  it('parses refresh request and response', () => {
    expect(ThreadRefreshRequest.safeParse({ sandbox_id: 'sbx_abc123', current_token: 'old' }).success).toBe(
      true,
    );
    expect(ThreadRefreshRequest.safeParse({ sandbox_id: 'sbx_abc123' }).success).toBe(false);
    expect(ThreadRefreshRequest.safeParse({ sandbox_id: 'sbx_abc123', current_token: '' }).success).toBe(
      false,
    );
    const res = { token: 'new', expires_at: '2026-02-26T12:30:00Z', refresh_before: '2026-02-26T12:25:00Z' };
    expect(ThreadRefreshResponse.parse(res)).toEqual(res);
    expect(
      ThreadRefreshResponse.safeParse({ token: 'new', expires_at: '2026-02-26T12:30:00Z' }).success,
    ).toBe(false);
  });

  it('parses heartbeat request and response', () => {
    expect(ThreadHeartbeatRequest.parse({})).toEqual({});
    expect(ThreadHeartbeatRequest.parse({ sandbox_id: 'sbx_1' })).toEqual({ sandbox_id: 'sbx_1' });
    expect(ThreadHeartbeatRequest.safeParse({ lease: 60 }).success).toBe(false);
    const res = { sandbox_id: 'sbx_1', lease_expires_at: '2026-02-26T13:00:00Z', state: 'active' };
    expect(ThreadHeartbeatResponse.parse(res)).toEqual(res);
    expect(ThreadHeartbeatResponse.safeParse({ ...res, state: 'alive' }).success).toBe(false);
  });

  it('validates the thread id in the path', () => {
    expect(ThreadPathParams.safeParse({ thread_id: 'thr_456' }).success).toBe(true);
    expect(ThreadPathParams.safeParse({ thread_id: 'thr/456' }).success).toBe(false);
  });
});
