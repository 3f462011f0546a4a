// The broker's OpenAPI 3.1 document, generated from the route table and its zod
// schemas, so the document cannot disagree with what the broker validates. zod
// emits JSON Schema 2020-12, which OpenAPI 3.1 uses as is.
import { z } from 'zod';
import { ERROR_TABLE, ErrorEnvelope, type ErrorCode } from './errors.js';
import { ROUTES, type RouteSpec } from './routes.js';

export interface OpenApiOptions {
  readonly title?: string;
  readonly version: string;
  /** Where the broker is reachable (its public URL); omitted, paths are relative. */
  readonly serverUrl?: string;
}

type JsonObject = Record<string, unknown>;

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonObject =>
  z.toJSONSchema(schema, { io, unrepresentable: 'any' });

/** Request bodies are documented as clients may send them; responses as the broker sends them. */
function operation(name: string, route: RouteSpec): JsonObject {
  const params = jsonSchema(route.params, 'input') as { properties?: Record<string, JsonObject> };
  const query = (route.query === undefined ? {} : jsonSchema(route.query, 'input')) as {
    properties?: Record<string, JsonObject>;
    required?: string[];
  };
  return {
    operationId: name,
    summary: route.summary,
    parameters: [
      ...Object.entries(params.properties ?? {}).map(([param, schema]) => ({
        name: param,
        in: 'path',
        required: true,
        schema,
      })),
      ...Object.entries(query.properties ?? {}).map(([param, schema]) => ({
        name: param,
        in: 'query',
        required: query.required?.includes(param) ?? false,
        schema,
      })),
    ],
    ...(route.body === undefined
      ? {}
      : {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: jsonSchema(route.body, 'input') } },
          },
        }),
    responses: { ...success(route), ...errorResponses(route.errors) },
  };
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

/** One response per HTTP status, naming the codes that answer with it. */
function errorResponses(codes: readonly ErrorCode[]): JsonObject {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set<ErrorCode>([...codes, 'INTERNAL'])) {
    const { status } = ERROR_TABLE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, named]) => [
      String(status),
      {
        description: named.join(', '),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
      },
    ]),
  );
}

export function buildOpenApiDocument(options: OpenApiOptions): JsonObject {
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const [name, route] of Object.entries(ROUTES) as [string, RouteSpec][]) {
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation(name, route) };
  }
  return {
    openapi: '3.1.0',
    info: { title: options.title ?? 'sbx broker', version: options.version },
    ...(options.serverUrl === undefined ? {} : { servers: [{ url: options.serverUrl }] }),
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
