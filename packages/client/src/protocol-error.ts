import type { ClientErrorOptions } from './client-error.js';
import { InternalError } from './error-classes.js';

export interface ProtocolErrorOptions extends ClientErrorOptions {
  /** Where the answer came from: `GET /v1/files/stat`, `WS /v1/exec/ws`. */
  readonly route: string;
}

/**
 * The server answered, but not in the protocol: a body that is not JSON or not the route's
 * schema, an error status the protocol does not define without an error envelope (a
 * proxy's HTML 502 page), a WebSocket frame that cannot be read. It is the server's
 * fault (hence INTERNAL) and never retried: a POST may have taken effect. The message
 * names the route; it never quotes the body, which may carry a token, but `cause` keeps
 * the parser's error for debugging.
 */
export class ProtocolError extends InternalError {
  readonly route: string;

  constructor(message: string, options: ProtocolErrorOptions) {
    super(message, options);
    this.route = options.route;
  }
}

/** `METHOD /path` of a URL: no query, no credentials in it. */
export function routeOf(method: string, url: string): string {
  return `${method} ${new URL(url).pathname}`;
}

/** A parser's complaint without the input: zod's issue paths and messages (they name types, not values). */
export function problemOf(cause: unknown): string {
  if (cause instanceof SyntaxError) return 'is not JSON';
  const issues = issuesOf(cause);
  if (issues === undefined) return 'does not match its schema';
  const listed = issues.slice(0, 3).map((issue) => {
    const at = issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.');
    return `${at}: ${issue.message}`;
  });
  const more = issues.length > listed.length ? `; and ${issues.length - listed.length} more` : '';
  return `does not match its schema (${listed.join('; ')}${more})`;
}

interface Issue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

function issuesOf(cause: unknown): readonly Issue[] | undefined {
  if (typeof cause !== 'object' || cause === null || !('issues' in cause)) return undefined;
  const issues: unknown = cause.issues;
  return Array.isArray(issues) && issues.every(isIssue) ? issues : undefined;
}

function isIssue(value: unknown): value is Issue {
  if (typeof value !== 'object' || value === null) return false;
  return (
    'path' in value && Array.isArray(value.path) && 'message' in value && typeof value.message === 'string'
  );
}
