// What every answer must be: never a 5xx, never a stack trace; a refusal is the protocol's
// error envelope with the status its code has (OAuth routes: RFC 6749 §5.2's shape); a
// success is one the route documents; and an answer comes, within the ceiling.
import { ERROR_TABLE, ErrorEnvelope } from '../../../packages/protocol/src/index.js';
import type { RouteModel } from './http-cases.js';
import type { Framing, Outcome } from './wire.js';

const STACK_TRACE = /\n\s+at [\w.<>]+ \(|node:internal|\/src\/[\w/-]+\.ts:\d+/;

/** RFC 6749 §5.2 `error` values (and RFC 8693's `invalid_target`). */
const OAUTH_ERRORS = new Set([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'invalid_target',
]);

/** Why `text` is not the error envelope for `status`, or undefined when it is. */
export function envelopeProblem(text: string, status: number, oauth = false): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return `not JSON: ${JSON.stringify(text.slice(0, 120))}`;
  }
  if (oauth && typeof json === 'object' && json !== null && 'error' in json && typeof json.error === 'string')
    return OAUTH_ERRORS.has(json.error) ? undefined : `unknown OAuth error ${json.error}`;
  const parsed = ErrorEnvelope.safeParse(json);
  if (!parsed.success) return `not an error envelope: ${text.slice(0, 160)}`;
  const expected = ERROR_TABLE[parsed.data.error.code].status;
  return expected === status
    ? undefined
    : `${parsed.data.error.code} answered with ${status}, not ${expected}`;
}

type Judged = Omit<import('./fuzz-run.js').Judged, 'description'>;

const UNREACHABLE_AGENT =
  /^\{"error":\{"code":"PROVIDER_UNAVAILABLE","message":"the sandbox agent is unreachable","retryable":true,/;

/** Framings after which the server may close without an answer: the client broke the stream. */
const MAY_CLOSE: readonly Framing[] = ['truncated'];

/**
 * Judges one answer. `documented` names the success statuses of the routes the request's
 * method and path actually match (a mutated method or path may reach another route).
 */
export function judgeHttp(
  route: RouteModel,
  method: string,
  framing: Framing,
  outcome: Outcome,
  documented: readonly number[],
  ceilingMs: number,
): Judged {
  if (outcome.kind === 'hang') return { kind: 'hang', problem: `no answer within ${ceilingMs} ms` };
  if (outcome.kind === 'closed') {
    const kind = outcome.reset ? 'reset' : 'closed';
    // Node closes CONNECT requests of a server with no 'connect' listener: neither service proxies.
    if (method === 'CONNECT') return { kind: `${kind} (CONNECT)` };
    return MAY_CLOSE.includes(framing) ? { kind } : { kind, problem: `connection ${kind} without an answer` };
  }
  const { status, headers, body } = outcome;
  const text = body.toString('utf8');
  // The broker's sandboxes here come from its fake provider and have no agent behind their
  // address: a relayed request that gets past validation is rightly told so, retryably.
  if (status === 502 && UNREACHABLE_AGENT.test(text)) return { kind: '502 no agent' };
  if (status >= 500) return { kind: String(status), problem: `${status}: ${text.slice(0, 300)}` };
  if (STACK_TRACE.test(text))
    return { kind: String(status), problem: `stack trace in the answer: ${text.slice(0, 300)}` };
  if (status >= 400) {
    // Node's HTTP parser refuses what is not HTTP/1.1 before any of the service's code runs:
    // no request id, no body (docs/security.md: 431 for heads over 16 KiB).
    if (headers['x-request-id'] === undefined && body.length === 0) return { kind: `http-layer ${status}` };
    if (method === 'HEAD' && body.length === 0) return { kind: String(status) };
    const problem = envelopeProblem(text, status, route.path.startsWith('/oauth/'));
    return problem === undefined ? { kind: String(status) } : { kind: String(status), problem };
  }
  if (documented.includes(status)) return { kind: String(status) };
  return {
    kind: String(status),
    problem: `undocumented success ${status} (documented: ${documented.join(', ') || 'none'})`,
  };
}

/** The routes a method and raw request target reach, by their templates (`{path}` spans segments). */
export function documentedStatuses(routes: readonly RouteModel[], method: string, target: Buffer): number[] {
  const path = target.toString('latin1').split('?', 1)[0] ?? '';
  const statuses = new Set<number>();
  for (const route of routes) {
    const sameMethod = route.method === method || (method === 'HEAD' && route.method === 'GET');
    if (!sameMethod) continue;
    const pattern = route.path
      .split(/(\{\w+\})/)
      .map((part) =>
        part === '{path}'
          ? '.*'
          : /^\{\w+\}$/.test(part)
            ? '[^/]+'
            : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'),
      )
      .join('');
    // Express routes match case-insensitively and with a trailing slash (not strict).
    if (new RegExp(`^${pattern}/?$`, 'i').test(path))
      for (const status of route.success) statuses.add(status);
  }
  return [...statuses];
}
