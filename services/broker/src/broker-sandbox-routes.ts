// The sandbox resource API's part of the broker's routes (docs/sandboxes.md): the
// resources, their relayed data plane, the session sockets, and relay mode (the agents'
// own routes under `/v1/sandboxes/{id}/dp/…`, and session answers pointing there).
import type { Router } from 'express';
import type { BrokerRoutesDeps } from './broker-routes.js';
import type { AuthFailureLimiter } from './domain/rate-limit/auth-failure-limiter.js';
import type { CallerAuthenticator } from './domain/auth/authenticate-caller.js';
import { stoppedByOwner } from './domain/sandboxes/owner-stops.js';
import { relayedSessions } from './domain/sandboxes/relayed-sessions.js';
import { SandboxResources } from './domain/sandboxes/sandbox-resources.js';
import type { SessionService } from './domain/sessions/session-service.js';
import type { DataplaneRelayDeps } from './http/sandboxes/dataplane-relay.js';
import { dataplaneRelayRoutes } from './http/sandboxes/dataplane-relay-routes.js';
import { sandboxRelayRoutes } from './http/sandboxes/sandbox-relay-routes.js';
import { sandboxRoutes } from './http/sandboxes/sandbox-routes.js';
import { sandboxSessionSockets, type UpgradeHandler } from './http/sandboxes/sandbox-session-socket.js';
import type { SessionHttpDeps } from './http/sessions/route-kit.js';
import { SandboxResourceQueries } from './store/sandbox-resource-queries.js';

export interface SandboxRouting {
  readonly routers: Router[];
  readonly upgrade: UpgradeHandler;
  /** The session service as the session and thread routes present it (relay mode rewrites addresses). */
  readonly sessionView: SessionService;
  close(): void;
}

export function sandboxRouting(
  deps: BrokerRoutesDeps,
  http: SessionHttpDeps,
  callers: CallerAuthenticator,
  failures?: AuthFailureLimiter,
): SandboxRouting {
  const queries = new SandboxResourceQueries(deps.prisma);
  const resources = sandboxResources(deps, queries);
  const relay = deps.dataplaneRelay;
  const dataplane: DataplaneRelayDeps | undefined =
    relay === undefined
      ? undefined
      : {
          resources,
          queries,
          callers,
          failures,
          capabilities: {
            vault: deps.vault,
            issuances: deps.repositories.tokens,
            issuer: deps.service.settings.tokenIssuer,
            now: deps.clock,
          },
        };
  const sockets = sandboxSessionSockets({
    resources,
    authenticator: callers,
    failures,
    audit: deps.audit,
    logger: deps.logger,
    allowedOrigins: deps.allowedOrigins,
    dataplane,
  });
  const routers = [sandboxRelayRoutes({ ...http, resources }), sandboxRoutes({ ...http, resources })];
  if (dataplane !== undefined) routers.unshift(dataplaneRelayRoutes({ ...dataplane, audit: deps.audit }));
  return {
    routers,
    upgrade: sockets.upgrade,
    sessionView: relay === undefined ? deps.service : relayedSessions(deps.service, relay.publicUrl),
    close: () => sockets.close(),
  };
}

function sandboxResources(deps: BrokerRoutesDeps, queries: SandboxResourceQueries): SandboxResources {
  return new SandboxResources({
    queries,
    sessions: deps.service,
    actions: {
      reaper: deps.reaperRepository,
      provider: deps.provider,
      coordination: deps.coordination,
      timers: deps.lifecycleTimers,
      clock: deps.clock,
      logger: deps.logger,
    },
    // A commit per call would cost more than the call: renewed once half the lease is gone.
    renewLease: async (sandbox) => {
      const now = deps.clock();
      const idleMs = deps.lifecycleTimers.idleTimeoutMs;
      if (sandbox.leaseExpiresAt.getTime() - now > idleMs / 2) return;
      const until = Math.min(now + idleMs, sandbox.hardExpiresAt.getTime());
      await deps.repositories.sandboxes.renewLease(sandbox.id, new Date(until), new Date(now));
    },
    stoppedByOwner: (sandboxId) => stoppedByOwner(deps.prisma, sandboxId),
    tokens: {
      vault: deps.vault,
      issuances: deps.repositories.journal,
      issuer: deps.service.settings.tokenIssuer,
      now: deps.clock,
    },
  });
}
