import type { FullSessionResponse } from '../src/index.js';

/** What a fake broker would build for a thread-scoped binding. */
export function fullThreadResponse(): FullSessionResponse {
  return {
    binding: {
      id: 'bind_789',
      scope: { type: 'thread', id: 'thr_123' },
      sandbox_id: 'sb_123',
      provider: 'langsmith',
      state: 'active',
      lease_expires_at: '2026-02-27T21:00:00Z',
    },
    dataplane: {
      http_base_url: 'https://dp.example.com/v1',
      ws_base_url: 'wss://dp.example.com/v1',
      workspace_path: '/workspace',
    },
    credentials: {
      token_type: 'Bearer',
      access_token: 'short_lived_token',
      expires_at: '2026-02-27T20:20:00Z',
      granted_capabilities: ['fs:ro', 'fs:rw', 'shell'],
    },
    policy: { idle_timeout_seconds: 900, hard_ttl_seconds: 28800, isolation: 'bubblewrap' },
  };
}
