// The agent's route table: every HTTP route and WebSocket endpoint of the data plane
// with its capability scopes and schemas (docs/protocol.md#dataplane). The OpenAPI
// document docs/openapi-agent.json is generated from it (openapi-agent.ts).
import { z } from 'zod';
import { AgentHealth } from './agent-health.js';
import { AGENT_EXEC_ROUTES } from './agent-exec-routes.js';
import { AGENT_FILE_ROUTES } from './agent-file-routes.js';
import type { AgentRouteSpec, AgentWsRouteSpec } from './agent-route-spec.js';
import { SandboxInfo } from './dataplane-files.js';
import { ExecClientFrame, ShellClientFrame, WatchClientFrame } from './frames.js';
import { ExecServerFrame, ShellServerFrame, WatchServerFrame } from './server-frames.js';

const NoParams = z.strictObject({});

const AGENT_SERVICE_ROUTES = {
  info: {
    method: 'GET',
    path: '/v1/info',
    summary: 'Where the workspace is for this sandbox (also HOME and the default cwd), its id and version',
    scopes: [],
    params: NoParams,
    response: SandboxInfo,
    errors: ['UNAUTHENTICATED', 'BACKEND_UNAVAILABLE'],
  },
  healthz: {
    method: 'GET',
    path: '/healthz',
    summary: 'Liveness for anyone ({status}); with a valid token of this sandbox, its report',
    scopes: [],
    alsoAuth: ['anonymous'],
    params: NoParams,
    response: AgentHealth,
    errors: ['UNAUTHENTICATED', 'BACKEND_UNAVAILABLE'],
  },
  metrics: {
    method: 'GET',
    path: '/metrics',
    summary: "Prometheus counters, for the operator's AGENT_METRICS_TOKEN or any token of this sandbox",
    scopes: [],
    alsoAuth: ['metrics-token'],
    params: NoParams,
    produces: { 'text/plain': 'text' },
    errors: ['UNAUTHENTICATED', 'BACKEND_UNAVAILABLE'],
  },
} as const satisfies Record<string, AgentRouteSpec>;

export const AGENT_ROUTES = {
  ...AGENT_SERVICE_ROUTES,
  ...AGENT_FILE_ROUTES,
  ...AGENT_EXEC_ROUTES,
} as const satisfies Record<string, AgentRouteSpec>;
export type AgentRouteName = keyof typeof AGENT_ROUTES;

/** RFC 6455 1013 on the shell socket: the shared cause, and the shell's own. */
const TRY_AGAIN_LATER =
  'try again later: too many sockets awaiting auth, the shell limit is reached, or this client reads too slowly';

export const AGENT_WS_ROUTES = {
  shellSocket: {
    path: '/v1/shell/ws',
    aliases: ['/ws'],
    endpoint: 'shell',
    summary:
      'Open a PTY shell (shell) or attach to a running one by shell_session_id (shell:ro suffices); output: "binary" sends its output as binary messages',
    scopes: ['shell', 'shell:ro'],
    clientFrames: ShellClientFrame,
    serverFrames: ShellServerFrame,
    closeCodes: {
      1013: TRY_AGAIN_LATER,
      4403: 'start asked to open a shell with a shell:ro token',
      4404: 'start named a shell_session_id that does not exist (any more)',
    },
  },
  execSocket: {
    path: '/v1/exec/ws',
    endpoint: 'exec',
    summary: 'Run one program with streamed stdin, stdout and stderr; a closed socket kills it',
    scopes: ['process'],
    clientFrames: ExecClientFrame,
    serverFrames: ExecServerFrame,
    closeCodes: {},
  },
  watchSocket: {
    path: '/v1/files/watch',
    endpoint: 'watch',
    summary: 'File events (create, write, remove, rename) under a path, optionally recursive',
    scopes: ['fs:ro'],
    clientFrames: WatchClientFrame,
    serverFrames: WatchServerFrame,
    closeCodes: {},
  },
} as const satisfies Record<string, AgentWsRouteSpec>;
export type AgentWsRouteName = keyof typeof AGENT_WS_ROUTES;
