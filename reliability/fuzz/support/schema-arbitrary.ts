// Values a route's schema accepts, as fast-check arbitraries: the routes' zod schemas go
// through the JSON Schema the OpenAPI documents are built from (packages/protocol's
// openapi-kit.ts), and the JSON Schema keywords those use become generators. Refinements
// JSON Schema cannot say (exec's "argv or cmd") are left to the mutations to break anyway.
import * as fc from 'fast-check';
import { jsonSchema } from '../../../packages/protocol/src/openapi-kit.js';

type Schema = Record<string, unknown>;
/** A zod schema of the protocol package (typed through it: zod is not a dependency of the root). */
type ZodSchema = Parameters<typeof jsonSchema>[0];

/** Longest valid string or array drawn: valid inputs stay small, the mutations make them big. */
const MAX_VALID_LENGTH = 40;

const asSchema = (value: unknown): Schema =>
  typeof value === 'object' && value !== null ? (value as Schema) : {};
const num = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

function stringArbitrary(schema: Schema): fc.Arbitrary<string> {
  const minLength = num(schema['minLength']) ?? 0;
  const maxLength = Math.max(
    minLength,
    Math.min(num(schema['maxLength']) ?? MAX_VALID_LENGTH, MAX_VALID_LENGTH),
  );
  const pattern = schema['pattern'];
  if (typeof pattern === 'string') {
    try {
      return fc
        .stringMatching(new RegExp(pattern))
        .filter((text) => text.length >= minLength && text.length <= (num(schema['maxLength']) ?? Infinity));
    } catch {
      // A pattern fast-check cannot generate from: plain strings, which the mutations would make anyway.
    }
  }
  switch (schema['format']) {
    case 'date-time':
      return fc
        .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((date) => date.toISOString());
    case 'email':
      return fc.emailAddress();
    case 'uri':
      return fc.webUrl();
    case 'uuid':
      return fc.uuid();
    default:
      return fc.string({ minLength, maxLength });
  }
}

function numberArbitrary(schema: Schema, integer: boolean): fc.Arbitrary<number> {
  const exclusiveMin = num(schema['exclusiveMinimum']);
  const exclusiveMax = num(schema['exclusiveMaximum']);
  let min =
    num(schema['minimum']) ?? (exclusiveMin === undefined ? undefined : exclusiveMin + (integer ? 1 : 1e-9));
  let max =
    num(schema['maximum']) ?? (exclusiveMax === undefined ? undefined : exclusiveMax - (integer ? 1 : 1e-9));
  if (integer) {
    min = Math.max(Math.ceil(min ?? -(2 ** 31)), Number.MIN_SAFE_INTEGER);
    max = Math.min(Math.floor(max ?? 2 ** 31), Number.MAX_SAFE_INTEGER);
    return fc.integer({ min, max: Math.max(min, max) });
  }
  return fc.double({ min: min ?? -1e9, max: max ?? 1e9, noNaN: true, noDefaultInfinity: true });
}

function objectArbitrary(schema: Schema, root: Schema, depth: number): fc.Arbitrary<unknown> {
  const properties = asSchema(schema['properties']);
  const required = Array.isArray(schema['required']) ? (schema['required'] as string[]) : [];
  const known = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => [
      name,
      fromSchema(asSchema(property), root, depth + 1),
    ]),
  );
  const fixed = fc.record(known, { requiredKeys: required.filter((name) => name in known) });
  const additional = schema['additionalProperties'];
  if (additional === undefined || additional === false || Object.keys(properties).length > 0) return fixed;
  // A record (`z.record`): names from propertyNames, values from additionalProperties.
  const names =
    schema['propertyNames'] === undefined
      ? fc.string({ maxLength: 12 })
      : stringArbitrary(asSchema(schema['propertyNames']));
  const values =
    additional === true ? fc.jsonValue({ maxDepth: 2 }) : fromSchema(asSchema(additional), root, depth + 1);
  return fc.dictionary(names, values, { maxKeys: 4 });
}

function arrayArbitrary(schema: Schema, root: Schema, depth: number): fc.Arbitrary<unknown> {
  const minLength = num(schema['minItems']) ?? 0;
  const maxLength = Math.max(minLength, Math.min(num(schema['maxItems']) ?? 4, 4));
  if (Array.isArray(schema['prefixItems']))
    return fc.tuple(
      ...(schema['prefixItems'] as unknown[]).map((item) => fromSchema(asSchema(item), root, depth + 1)),
    );
  const items =
    schema['items'] === undefined
      ? fc.jsonValue({ maxDepth: 1 })
      : fromSchema(asSchema(schema['items']), root, depth + 1);
  return fc.array(items, { minLength, maxLength });
}

function byType(type: string, schema: Schema, root: Schema, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
      return numberArbitrary(schema, true);
    case 'number':
      return numberArbitrary(schema, false);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return arrayArbitrary(schema, root, depth);
    case 'object':
      return objectArbitrary(schema, root, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** An arbitrary of values `schema` (JSON Schema 2020-12, as zod writes it) accepts. */
export function fromSchema(schema: Schema, root: Schema = schema, depth = 0): fc.Arbitrary<unknown> {
  if (depth > 8) return fc.constant(null);
  const ref = schema['$ref'];
  if (typeof ref === 'string') {
    const target = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((node, part) => asSchema(node)[part], root);
    return fromSchema(asSchema(target), root, depth + 1);
  }
  if ('const' in schema) return fc.constant(schema['const']);
  if (Array.isArray(schema['enum'])) return fc.constantFrom(...(schema['enum'] as unknown[]));
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const options = schema[keyword];
    if (Array.isArray(options))
      return fc.oneof(...options.map((option) => fromSchema(asSchema(option), root, depth + 1)));
  }
  if (Array.isArray(schema['allOf'])) {
    const merged = Object.assign({}, ...(schema['allOf'] as Schema[])) as Schema;
    return fromSchema(merged, root, depth + 1);
  }
  const type = schema['type'];
  if (Array.isArray(type))
    return fc.oneof(...(type as string[]).map((one) => byType(one, schema, root, depth)));
  if (typeof type === 'string') return byType(type, schema, root, depth);
  if (schema['properties'] !== undefined) return objectArbitrary(schema, root, depth);
  return fc.jsonValue({ maxDepth: 2 });
}

/** Valid input values of a zod schema (requests are generated as clients may send them). */
export const validInput = (schema: ZodSchema): fc.Arbitrary<unknown> =>
  fromSchema(jsonSchema(schema, 'input'));

/** The properties of an object schema (path parameters, query parameters), each with its arbitrary. */
export function propertyArbitraries(schema: ZodSchema): Record<string, fc.Arbitrary<unknown>> {
  const json = jsonSchema(schema, 'input');
  return Object.fromEntries(
    Object.entries(asSchema(json['properties'])).map(([name, property]) => [
      name,
      fromSchema(asSchema(property), json),
    ]),
  );
}
