import { describe, expect, it } from '@jest/globals';
import {
  GetBindingResponse,
  MvpSessionResponse,
  SessionResponse,
  toGetBindingResponse,
  toSessionResponse,
  type FullSessionResponse,
} from '@sbx/protocol';
import { z } from 'zod';
import { A2A_ENVIRONMENT_KEY, toA2aTaskEnvironment } from '../src/index.js';

/** The A2A JSON shapes the view must fit (Task, Artifact, FilePart with a URI). */
const FilePart = z.strictObject({
  kind: z.literal('file'),
  file: z.strictObject({ uri: z.url(), name: z.string().optional(), mimeType: z.string().optional() }),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
const Artifact = z.strictObject({
  artifactId: z.string().min(1),
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(FilePart).min(1),
});
const Task = z.strictObject({
  kind: z.literal('task'),
  id: z.string(),
  contextId: z.string().min(1),
  status: z.object({ state: z.string() }),
  artifacts: z.array(Artifact).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

const full: FullSessionResponse = {
  binding: {
    id: 'bind_789',
    scope: { type: 'thread', id: 'thr_123' },
    sandbox_id: 'sb_123',
    provider: 'local',
    state: 'active',
    lease_expires_at: '2026-02-27T21:00:00.000Z',
  },
  dataplane: {
    http_base_url: 'https://dp.example.com/v1',
    ws_base_url: 'wss://dp.example.com/v1',
    workspace_path: '/workspace',
  },
  credentials: {
    token_type: 'Bearer',
    access_token: 'secret.capability.token',
    expires_at: '2026-02-27T20:20:00.000Z',
    granted_capabilities: ['fs:rw', 'process'],
  },
  policy: { idle_timeout_seconds: 900, hard_ttl_seconds: 28_800 },
};

describe('toA2aTaskEnvironment', () => {
  it('maps a session answer: sandbox id as contextId, session as metadata, dataplane as URIs', () => {
    const view = toA2aTaskEnvironment(SessionResponse.parse(toSessionResponse(full)));
    expect(view.contextId).toBe('sb_123');
    expect(view.metadata[A2A_ENVIRONMENT_KEY]).toEqual({
      session_id: 'bind_789',
      scope: { type: 'thread', id: 'thr_123' },
      sandbox_id: 'sb_123',
      provider: 'local',
      workspace_path: '/workspace',
      state: 'active',
      lease_expires_at: '2026-02-27T21:00:00.000Z',
      expires_at: '2026-02-27T20:20:00.000Z',
      granted_capabilities: ['fs:rw', 'process'],
    });
    expect(view.artifacts).toHaveLength(1);
    expect(view.artifacts[0]?.parts.map((p) => [p.metadata.rel, p.file.uri])).toEqual([
      ['workspace', 'https://dp.example.com/v1/files/'],
      ['dataplane.http', 'https://dp.example.com/v1'],
      ['dataplane.ws', 'wss://dp.example.com/v1'],
    ]);
  });

  it('never carries the capability token', () => {
    const text = JSON.stringify(toA2aTaskEnvironment(toSessionResponse(full)));
    expect(text).not.toContain('secret.capability.token');
  });

  it('merges into an A2A Task that fits the A2A shapes', () => {
    const view = toA2aTaskEnvironment(toSessionResponse(full));
    const task = {
      kind: 'task',
      id: 'task_1',
      status: { state: 'working' },
      ...view,
      artifacts: [...view.artifacts],
      metadata: { ...view.metadata },
    };
    expect(Task.safeParse(task).success).toBe(true);
  });

  it('maps the MVP shape (a thread scope, no lifecycle state)', () => {
    const mvp = MvpSessionResponse.parse({
      session_id: 'ssn_1',
      thread_id: 'thr_1',
      sandbox: {
        id: 'sb_1',
        provider: 'langsmith',
        http_base_url: 'https://dp.example.com/',
        ws_base_url: 'wss://dp.example.com/',
      },
      token: 'opaque_token',
      expires_at: '2026-02-27T20:20:00Z',
    });
    const view = toA2aTaskEnvironment(mvp);
    expect(view.contextId).toBe('sb_1');
    expect(view.metadata[A2A_ENVIRONMENT_KEY]).toEqual({
      session_id: 'ssn_1',
      scope: { type: 'thread', id: 'thr_1' },
      sandbox_id: 'sb_1',
      provider: 'langsmith',
      workspace_path: '/workspace',
      expires_at: '2026-02-27T20:20:00Z',
    });
    expect(view.artifacts[0]?.parts[0]?.file.uri).toBe('https://dp.example.com/files/');
    expect(JSON.stringify(view)).not.toContain('opaque_token');
  });

  it('maps a GET answer (no credentials: no expiry, no capabilities)', () => {
    const got = GetBindingResponse.parse(toGetBindingResponse(full));
    const metadata = toA2aTaskEnvironment(got).metadata[A2A_ENVIRONMENT_KEY];
    expect(metadata).toMatchObject({ session_id: 'bind_789', state: 'active', sandbox_id: 'sb_123' });
    expect(metadata).not.toHaveProperty('expires_at');
    expect(metadata).not.toHaveProperty('granted_capabilities');
  });
});
