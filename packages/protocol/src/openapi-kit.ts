// What both OpenAPI 3.1 documents (the broker's, openapi.ts; the agent's,
// openapi-agent.ts) are built from: zod's JSON Schema (2020-12, which OpenAPI 3.1
// uses as is), parameters taken from the params and query schemas, and one error
// response per HTTP status.
import { z } from 'zod';
import { ERROR_TABLE, type ErrorCode } from './errors.js';

export type JsonObject = Record<string, unknown>;

/** Request shapes are documented as clients may send them (`input`); answers as servers send them. */
export const jsonSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonObject =>
  z.toJSONSchema(schema, { io, unrepresentable: 'any' });

export const ERROR_ENVELOPE_REF = '#/components/schemas/ErrorEnvelope';

interface ObjectSchema {
  properties?: Record<string, JsonObject>;
  required?: string[];
}

/** Path parameters (all required) from `params`, query parameters from `query`. */
export function parametersOf(params: z.ZodType, query: z.ZodType | undefined): JsonObject[] {
  const path = jsonSchema(params, 'input') as ObjectSchema;
  const search = (query === undefined ? {} : jsonSchema(query, 'input')) as ObjectSchema;
  return [
    ...Object.entries(path.properties ?? {}).map(([name, schema]) => ({
      name,
      in: 'path',
      required: true,
      schema,
    })),
    ...Object.entries(search.properties ?? {}).map(([name, schema]) => ({
      name,
      in: 'query',
      required: search.required?.includes(name) ?? false,
      schema,
    })),
  ];
}

/** One response per HTTP status, naming the codes that answer with it (INTERNAL always). */
export function errorResponses(codes: readonly ErrorCode[]): JsonObject {
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
        content: { 'application/json': { schema: { $ref: ERROR_ENVELOPE_REF } } },
      },
    ]),
  );
}
