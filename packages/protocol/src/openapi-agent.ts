// The agent's OpenAPI 3.1 document (docs/openapi-agent.json), generated from its route
// table (agent-routes.ts) and the zod schemas the agent validates with. WebSocket
// endpoints follow the convention of docs/protocol.md#openapi-documents: a GET answered
// 101, with `x-sbx-websocket` naming the frame schemas (components) and close codes.
import type { z } from 'zod';
import type { AgentRequestHeader, AgentRouteSpec, AgentWsRouteSpec } from './agent-route-spec.js';
import { AGENT_ROUTES, AGENT_WS_ROUTES } from './agent-routes.js';
import { ErrorEnvelope, type ErrorCode } from './errors.js';
import { errorResponses, jsonSchema, parametersOf, type JsonObject } from './openapi-kit.js';
import { AUTH_TIMEOUT_MS, MAX_FRAME_BYTES, WS_CLOSE_CODES } from './ws-close.js';

export interface AgentOpenApiOptions {
  readonly title?: string;
  readonly version: string;
}

const DESCRIPTION =
  "The data plane: one agent per sandbox, reached at a session's `http_base_url` (WebSocket endpoints at `ws_base_url`) " +
  'with its capability token. WebSocket endpoints are GET operations answered `101 Switching Protocols`; ' +
  'their `x-sbx-websocket` names the capabilities, the client and server frame schemas and the close codes ' +
  '(docs/protocol.md#openapi-documents).';

const SUCCESS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  206: 'Partial Content: the requested Range (Content-Range names it)',
  304: 'Not Modified: If-None-Match matched the ETag',
};

const HEADERS: Record<AgentRequestHeader, string> = {
  Range: 'One byte range (`bytes=0-99`, `bytes=100-`, `bytes=-100`); 416 when it cannot be satisfied',
  'If-Range': 'An ETag: the Range applies only while the file still has it (otherwise the whole file)',
  'If-Match':
    'Write only over these ETags (strong comparison); `*`: only when the file exists (412 otherwise)',
  'If-None-Match': 'ETags: 304 when one matches the current ETag',
};

/** On a write, If-None-Match means create-only. */
const headerDescription = (name: AgentRequestHeader, route: AgentRouteSpec): string =>
  name === 'If-None-Match' && route.body !== undefined
    ? '`*`: create only (412 when the file exists)'
    : HEADERS[name];

const EXP_PARAMETER = {
  name: 'exp',
  in: 'query',
  required: false,
  description: 'With a signed URL (`sig`): its expiry, in Unix seconds',
  schema: { type: 'string', pattern: '^[0-9]{1,12}$' },
};

/** Alternatives: one capability (or any valid token), then the other ways in. */
function security(route: AgentRouteSpec): JsonObject[] {
  const tokens =
    route.scopes.length === 0 ? [{ capability: [] }] : route.scopes.map((s) => ({ capability: [s] }));
  const others = (route.alsoAuth ?? []).map((way) =>
    way === 'anonymous' ? {} : way === 'signed-url' ? { signedUrl: [] } : { metricsToken: [] },
  );
  return [...tokens, ...others];
}

function parameters(route: AgentRouteSpec): JsonObject[] {
  return [
    ...parametersOf(route.params, route.query),
    ...(route.alsoAuth?.includes('signed-url') === true ? [EXP_PARAMETER] : []),
    ...(route.headers ?? []).map((name) => ({
      name,
      in: 'header',
      required: false,
      description: headerDescription(name, route),
      schema: { type: 'string' },
    })),
  ];
}

function requestBody(body: z.ZodType | 'bytes'): JsonObject {
  if (body === 'bytes')
    return {
      required: true,
      description: 'The bytes of the file, whatever the Content-Type',
      content: { 'application/octet-stream': {} },
    };
  return { required: true, content: { 'application/json': { schema: jsonSchema(body, 'input') } } };
}

function content(route: AgentRouteSpec, status: number): JsonObject | undefined {
  if (route.method === 'HEAD' || status === 204 || status === 304) return undefined;
  const media: Record<string, JsonObject> = {};
  if (route.response !== undefined && status !== 206)
    media['application/json'] = { schema: jsonSchema(route.response, 'output') };
  for (const [type, body] of Object.entries(route.produces ?? {}))
    media[type] =
      body === 'bytes' ? {} : { schema: body === 'text' ? { type: 'string' } : jsonSchema(body, 'output') };
  return media;
}

function successes(route: AgentRouteSpec): JsonObject {
  const statuses =
    route.statuses ?? (route.response === undefined && route.produces === undefined ? [204] : [200]);
  return Object.fromEntries(
    statuses.map((status) => {
      const media = content(route, status);
      return [
        String(status),
        { description: SUCCESS[status], ...(media === undefined ? {} : { content: media }) },
      ];
    }),
  );
}

function operation(name: string, route: AgentRouteSpec): JsonObject {
  return {
    operationId: name,
    summary: route.summary,
    security: security(route),
    parameters: parameters(route),
    ...(route.body === undefined ? {} : { requestBody: requestBody(route.body) }),
    responses: { ...successes(route), ...errorResponses(errorsOf(route)) },
  };
}

/** The route's codes, and 415 wherever a JSON body is read (as in the broker's document). */
function errorsOf(route: AgentRouteSpec): readonly ErrorCode[] {
  const json = route.body !== undefined && route.body !== 'bytes';
  return json ? [...route.errors, 'UNSUPPORTED_MEDIA_TYPE'] : route.errors;
}

/** Close codes every endpoint may use (docs/protocol.md#close-codes). */
const SHARED_CLOSE_CODES: Record<number, string> = {
  [WS_CLOSE_CODES.NORMAL]: 'the program, shell or watch ended, or the client sent close',
  1001: 'the agent is shutting down',
  [WS_CLOSE_CODES.POLICY_VIOLATION]:
    'no or bad auth, auth timeout, a malformed or invalid frame, the token revoked',
  [WS_CLOSE_CODES.MESSAGE_TOO_BIG]: `a frame over ${MAX_FRAME_BYTES} bytes`,
  [WS_CLOSE_CODES.INTERNAL_ERROR]: 'the agent failed; reconnecting may help',
  1013: 'try again later: too many sockets awaiting auth',
  [WS_CLOSE_CODES.TOKEN_EXPIRED]: 'the token expired: refresh it, reconnect, authenticate again',
};

const frameSchemaName = (route: AgentWsRouteSpec, side: 'Client' | 'Server'): string =>
  `${route.endpoint.charAt(0).toUpperCase()}${route.endpoint.slice(1)}${side}Frame`;

function wsOperation(operationId: string, route: AgentWsRouteSpec, path: string): JsonObject {
  return {
    operationId,
    summary: route.summary,
    description:
      (path === route.path ? '' : `Alias of ${route.path}. `) +
      'A WebSocket upgrade. The first frame must be `auth` with a token granting one of the capabilities ' +
      `(within ${AUTH_TIMEOUT_MS} ms); the agent answers \`auth_ok\`. Frames are JSON text messages.`,
    security: [],
    parameters: [{ name: 'Upgrade', in: 'header', required: true, schema: { const: 'websocket' } }],
    responses: {
      '101': { description: 'Switching Protocols: the WebSocket is open; send the auth frame' },
      '403': { description: 'The Origin header names an origin outside the allowlist (no body)' },
    },
    'x-sbx-websocket': {
      endpoint: route.endpoint,
      capabilities: route.scopes,
      authentication: 'first-frame',
      client_frames: { $ref: `#/components/schemas/${frameSchemaName(route, 'Client')}` },
      server_frames: { $ref: `#/components/schemas/${frameSchemaName(route, 'Server')}` },
      max_frame_bytes: MAX_FRAME_BYTES,
      close_codes: { ...SHARED_CLOSE_CODES, ...route.closeCodes },
    },
  };
}

function paths(): Record<string, Record<string, JsonObject>> {
  const out: Record<string, Record<string, JsonObject>> = {};
  for (const [name, route] of Object.entries(AGENT_ROUTES) as [string, AgentRouteSpec][])
    out[route.path] = { ...out[route.path], [route.method.toLowerCase()]: operation(name, route) };
  for (const [name, route] of Object.entries(AGENT_WS_ROUTES) as [string, AgentWsRouteSpec][]) {
    out[route.path] = { get: wsOperation(name, route, route.path) };
    (route.aliases ?? []).forEach((alias, i) => {
      out[alias] = { get: wsOperation(`${name}Alias${i === 0 ? '' : i + 1}`, route, alias) };
    });
  }
  return out;
}

function frameSchemas(): JsonObject {
  const schemas: JsonObject = {};
  for (const route of Object.values(AGENT_WS_ROUTES) as AgentWsRouteSpec[]) {
    schemas[frameSchemaName(route, 'Client')] = jsonSchema(route.clientFrames, 'input');
    schemas[frameSchemaName(route, 'Server')] = jsonSchema(route.serverFrames, 'output');
  }
  return schemas;
}

const SERVERS = [
  {
    url: '{http_base_url}',
    description:
      "The sandbox's agent: `http_base_url` of a session answer (thread routes: `endpoints.http`); WebSockets at `ws_base_url`",
    variables: {
      http_base_url: { default: 'http://127.0.0.1:8080', description: 'The base URL, no trailing slash' },
    },
  },
  {
    url: '{broker_url}/v1/sandboxes/{sandbox_id}/dp',
    description:
      'Relay mode (DATAPLANE_RELAY=on): the same routes through the broker, with the capability token or a caller credential; no signed URLs (docs/sandboxes.md#relay-mode)',
    variables: {
      broker_url: { default: 'http://127.0.0.1:8080', description: "The broker's public URL" },
      sandbox_id: { default: 'sb_1', description: 'The sandbox id' },
    },
  },
];

export function buildAgentOpenApiDocument(options: AgentOpenApiOptions): JsonObject {
  return {
    openapi: '3.1.0',
    info: { title: options.title ?? 'sbx agent', version: options.version, description: DESCRIPTION },
    servers: SERVERS,
    security: [{ capability: [] }],
    paths: paths(),
    components: {
      securitySchemes: {
        capability: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT (sbx-cap+jwt) or opaque (sbo_…)',
          description:
            "A capability token of this sandbox. An operation's security lists the capability scopes of which one must be granted (implied ones count: fs:rw covers fs:ro, shell covers shell:ro); none: any valid token",
        },
        signedUrl: {
          type: 'apiKey',
          in: 'query',
          name: 'sig',
          description:
            'A signed file URL: `sig` with `exp`, bound to the sandbox, the operation (read or write) and the path (docs/protocol.md#signed-file-urls)',
        },
        metricsToken: {
          type: 'http',
          scheme: 'bearer',
          description: "The operator's AGENT_METRICS_TOKEN",
        },
      },
      schemas: { ErrorEnvelope: jsonSchema(ErrorEnvelope, 'output'), ...frameSchemas() },
    },
  };
}
