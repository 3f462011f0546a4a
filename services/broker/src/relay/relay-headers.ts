import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** RFC 9110 §7.6.1 connection-specific fields, plus the pre-standard ones proxies still see. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Never passed to the agent: the caller's own credential and cookies (the agent gets the
 * broker's token instead), the broker's host name, `expect` (the broker's server already
 * answered 100-continue), and forwarding claims the broker does not vouch for.
 */
const CALLER_ONLY = new Set(['authorization', 'cookie', 'host', 'expect', 'forwarded']);

/** Never passed back: the agent has no business setting cookies on the broker's origin. */
const AGENT_ONLY = new Set(['set-cookie']);

/** Field names a `Connection` header lists are hop-by-hop for this one connection. */
function connectionListed(headers: IncomingHttpHeaders): Set<string> {
  const value = headers.connection;
  if (value === undefined) return new Set();
  return new Set(
    value
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== ''),
  );
}

function copied(headers: IncomingHttpHeaders, dropped: ReadonlySet<string>): OutgoingHttpHeaders {
  const listed = connectionListed(headers);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.has(name) || dropped.has(name)) continue;
    if (name.startsWith('x-forwarded-')) continue;
    out[name] = value;
  }
  return out;
}

/**
 * The headers of the request to the agent: the caller's end-to-end headers (content-type,
 * content-length, range, if-*, accept …) with `Authorization: Bearer <token>` and, when the
 * broker assigned one, its request id for correlating both logs.
 */
export function upstreamRequestHeaders(
  headers: IncomingHttpHeaders,
  token: string,
  requestId: string | undefined,
): OutgoingHttpHeaders {
  const out = copied(headers, CALLER_ONLY);
  out['authorization'] = `Bearer ${token}`;
  if (requestId !== undefined) out['x-request-id'] = requestId;
  return out;
}

/**
 * The agent's response headers as the caller gets them. `x-request-id` stays the broker's
 * when the broker set one (the agent echoes the same value anyway, having been sent it).
 */
export function downstreamResponseHeaders(
  headers: IncomingHttpHeaders,
  brokerRequestId: string | undefined,
): OutgoingHttpHeaders {
  const out = copied(headers, AGENT_ONLY);
  if (brokerRequestId !== undefined) delete out['x-request-id'];
  return out;
}
