import type { z } from 'zod';
import { SbxError } from './sbx-error.js';

/** One schema violation, with a dotted path (`scope.id`, `argv.0`; `` for the root). */
export interface ValidationIssue {
  readonly path: string;
  readonly message: string;
}

export function issuesOf(error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map((part) => String(part)).join('.'),
    message: issue.message,
  }));
}

/**
 * A 400 BAD_REQUEST for a body, query or path that failed its schema. The message names
 * the first problem (`invalid request body: requested_capabilities.0: unknown capability "root" …`);
 * `details.issues` lists all of them. Values the caller sent are never echoed beyond what
 * the schema messages say.
 */
export function validationError(error: z.ZodError, what = 'request body'): SbxError {
  const issues = issuesOf(error);
  const first = issues[0];
  const summary =
    first === undefined
      ? 'is invalid'
      : first.path === ''
        ? first.message
        : `${first.path}: ${first.message}`;
  return new SbxError('BAD_REQUEST', `invalid ${what}: ${summary}`, { details: { issues } });
}

/** Parses `input` with `schema`, or throws the BAD_REQUEST of `validationError`. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what?: string): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(result.error, what);
  return result.data;
}
