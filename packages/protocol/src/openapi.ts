// The broker's OpenAPI 3.1 document, generated from the route table and its zod
// schemas, so the document cannot disagree with what the broker validates. The
// agent's data plane has its own document (openapi-agent.ts, docs/protocol.md#openapi-documents).
import { ErrorEnvelope, type ErrorCode } from './errors.js';
import { errorResponses, jsonSchema, parametersOf, type JsonObject } from './openapi-kit.js';
import { ROUTES, type RouteSpec } from './routes.js';

export interface OpenApiOptions {
  readonly title?: string;
  readonly version: string;
  /** Where the broker is reachable (its public URL); omitted: `/`, the origin the document came from. */
  readonly serverUrl?: string;
}

/** Request bodies are documented as clients may send them; responses as the broker sends them. */
function operation(name: string, route: RouteSpec): JsonObject {
  return {
    operationId: name,
    summary: route.summary,
    parameters: parametersOf(route.params, route.query),
    ...(route.body === undefined
      ? {}
      : {
          requestBody: {
            required: true,
            content: { [route.consumes ?? 'application/json']: { schema: jsonSchema(route.body, 'input') } },
          },
        }),
    responses: { ...success(route), ...errorResponses(errorsOf(route)) },
  };
}

/** The route's codes, and 415 wherever a JSON body is read (one sent as another type is refused). */
function errorsOf(route: RouteSpec): readonly ErrorCode[] {
  const json = route.body !== undefined && route.consumes === undefined;
  return json ? [...route.errors, 'UNSUPPORTED_MEDIA_TYPE'] : route.errors;
}

function success(route: RouteSpec): JsonObject {
  if (route.produces !== undefined) {
    const content = Object.fromEntries(route.produces.map((type) => [type, { schema: { type: 'string' } }]));
    return { '200': { description: 'OK (streamed)', content } };
  }
  if (route.response === undefined) return { '204': { description: 'No Content' } };
  return {
    [String(route.status ?? 200)]: {
      description: route.status === 201 ? 'Created' : 'OK',
      content: { 'application/json': { schema: jsonSchema(route.response, 'output') } },
    },
  };
}

/** `servers` of the broker's document: its public URL, or the origin that served the document. */
function brokerServers(serverUrl: string | undefined): JsonObject[] {
  if (serverUrl !== undefined) return [{ url: serverUrl, description: 'The broker' }];
  return [{ url: '/', description: 'The broker: the origin that served this document' }];
}

export function buildOpenApiDocument(options: OpenApiOptions): JsonObject {
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const [name, route] of Object.entries(ROUTES) as [string, RouteSpec][]) {
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation(name, route) };
  }
  return {
    openapi: '3.1.0',
    info: { title: options.title ?? 'sbx broker', version: options.version },
    servers: brokerServers(options.serverUrl),
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (sbk_…) or an OIDC access token of the configured issuer',
        },
      },
      schemas: { ErrorEnvelope: jsonSchema(ErrorEnvelope, 'output') },
    },
  };
}
