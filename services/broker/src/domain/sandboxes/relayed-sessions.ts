// Relay mode for the session and thread routes (docs/sandboxes.md "Relay mode"): the same
// sessions, whose dataplane addresses are the broker's `/v1/sandboxes/{id}/dp` instead of
// the agents'. Clients change nothing: they append the agent's paths to the base URL they
// are given and show the same token. Only what the routes present is rewritten; the broker
// itself (execute_code, the relay) keeps using the agents' own addresses.
import type { SandboxRecord } from '../../store/index.js';
import type { SessionService } from '../sessions/session-service.js';

export function relayedDataplane(sandbox: SandboxRecord, publicUrl: string): SandboxRecord {
  if (sandbox.httpBaseUrl === null || sandbox.wsBaseUrl === null) return sandbox;
  const http = `${publicUrl.replace(/\/+$/, '')}/v1/sandboxes/${encodeURIComponent(sandbox.id)}/dp`;
  return { ...sandbox, httpBaseUrl: http, wsBaseUrl: http.replace(/^http/, 'ws') };
}

export function relayedSessions(service: SessionService, publicUrl: string): SessionService {
  const view = <T extends { readonly sandbox: SandboxRecord }>(value: T): T => ({
    ...value,
    sandbox: relayedDataplane(value.sandbox, publicUrl),
  });
  return Object.freeze({
    ...service,
    negotiate: async (...args: Parameters<SessionService['negotiate']>) =>
      view(await service.negotiate(...args)),
    get: async (...args: Parameters<SessionService['get']>) => view(await service.get(...args)),
    refresh: async (...args: Parameters<SessionService['refresh']>) => view(await service.refresh(...args)),
    heartbeat: async (...args: Parameters<SessionService['heartbeat']>) =>
      view(await service.heartbeat(...args)),
  });
}
