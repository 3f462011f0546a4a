// `WS /v1/sandboxes/{id}/sessions/{sid}` (docs/sandboxes.md "Sessions"): a PTY of the
// sandbox through the broker. The caller's first message is `{type:'auth', token}` with
// its own credential (API key or OIDC token) holding attach:sandbox — exec:sandbox is not
// enough; the broker then opens the agent's shell socket with a `shell` token it minted
// and relays every frame both ways, closing the caller with the agent's close code.
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import {
  AUTH_TIMEOUT_MS,
  MAX_FRAME_BYTES,
  parseOrThrow,
  SandboxSessionParams,
  SbxError,
  WS_CLOSE_CODES,
  wsCloseReason,
} from '@sbx/protocol';
import { originAllowed, type Logger } from '@sbx/service-kit';
import { randomUUID } from 'node:crypto';
import type { AuditTrail } from '../../domain/audit/audit-trail.js';
import type { CallerAuthenticator } from '../../domain/auth/authenticate-caller.js';
import type { AuthFailureLimiter } from '../../domain/rate-limit/auth-failure-limiter.js';
import { withFailureLimit } from '../auth/limited-callers.js';
import { requireCallerScope } from '../../domain/auth/principal.js';
import { dataplanePath } from '../../domain/sandboxes/dataplane-operation.js';
import type { SandboxResources } from '../../domain/sandboxes/sandbox-resources.js';
import { authFrameToken, bufferOf, holdFrames, relayWebSocket } from '../../relay/index.js';
import { resolveRelay, type DataplaneRelayDeps, type ResolvedRelay } from './dataplane-relay.js';
import { sessionStartFrame } from './session-start-frame.js';

export interface SandboxSessionSocketDeps {
  readonly resources: SandboxResources;
  readonly authenticator: CallerAuthenticator;
  readonly audit: AuditTrail;
  readonly logger: Logger;
  /** Browser origins allowed to open sockets (none: no browser). */
  readonly allowedOrigins?: readonly string[] | undefined;
  /** Relay mode: `/v1/sandboxes/{id}/dp/<agent socket path>` too (absent: not served). */
  readonly dataplane?: DataplaneRelayDeps | undefined;
  /** Refused caller credentials count against the client address (limited-callers.ts). */
  readonly failures?: AuthFailureLimiter | undefined;
}

const SESSION_PATH = /^\/v1\/sandboxes\/([^/]+)\/sessions\/([^/]+)$/;
const DATAPLANE_PATH = /^\/v1\/sandboxes\/([^/]+)\/dp(\/.*)$/;

/** Handles the upgrade when the path is one of the broker's sockets; false leaves it to others. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** What the caller's credential resolves to for one matched socket path. */
type Resolve = (credential: string) => Promise<
  ResolvedRelay & {
    readonly agentPath: string;
    readonly route: string;
    readonly firstFrame?: ReturnType<typeof sessionStartFrame>;
  }
>;

/** A percent-decoded path segment: 400, as on the HTTP routes, when it is not valid percent-encoding. */
function decodedSegment(segment: string | undefined): string {
  try {
    return decodeURIComponent(segment ?? '');
  } catch {
    throw new SbxError('BAD_REQUEST', 'request path is not valid percent-encoding');
  }
}

/**
 * The route of a request's URL, matched as written (still percent-encoded, dot segments as
 * sent), as Express matches the HTTP routes: a URL parser would resolve `/dp/%2e%2e/…` out of
 * the relay's prefix before anything checked it. 400 (thrown) for a /dp path dataplanePath refuses.
 */
function routeOf(deps: SandboxSessionSocketDeps, requestUrl: string, address: string): Resolve | undefined {
  const url = new URL(requestUrl, 'http://broker.invalid');
  const pathname = requestUrl.split(/[?#]/, 1)[0] ?? '';
  const session = SESSION_PATH.exec(pathname);
  if (session !== null)
    return async (credential) => {
      // A malformed id is the caller's mistake (400, closed 1008), never the INTERNAL (1011) of a throw.
      const params = parseOrThrow(
        SandboxSessionParams,
        { id: decodedSegment(session[1]), sid: decodedSegment(session[2]) },
        'socket path',
      );
      const callers = withFailureLimit(
        deps.authenticator,
        deps.dataplane?.failures ?? deps.failures,
        address,
      );
      const principal = await callers.authenticate(`Bearer ${credential}`);
      requireCallerScope(principal, 'attach:sandbox');
      const context = { requestId: `req_${randomUUID()}`, principal };
      const target = await deps.resources.relayTarget(context, params.id, 'shell');
      const firstFrame = sessionStartFrame(params.sid);
      return { target, context, agentPath: '/v1/shell/ws', route: `sessions/${params.sid}`, firstFrame };
    };
  const dataplane = DATAPLANE_PATH.exec(pathname);
  const relay = deps.dataplane;
  if (dataplane === null || relay === undefined) return undefined;
  const agentPath = dataplanePath(dataplane[2] ?? '/');
  return async (credential) => {
    const sandboxId = decodedSegment(dataplane[1]);
    const resolved = await resolveRelay(relay, { sandboxId, credential, method: 'GET', agentPath, address });
    return { ...resolved, agentPath: `${agentPath}${url.search}`, route: `dp${agentPath}` };
  };
}

export function sandboxSessionSockets(deps: SandboxSessionSocketDeps): {
  upgrade: UpgradeHandler;
  close(): void;
} {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  const upgrade: UpgradeHandler = (req, socket, head) => {
    let resolve: Resolve | undefined;
    try {
      resolve = routeOf(deps, req.url ?? '/', req.socket.remoteAddress ?? 'unknown');
    } catch (err) {
      refuseUpgrade(socket, SbxError.from(err));
      return true;
    }
    if (resolve === undefined) return false;
    socket.on('error', () => socket.destroy());
    const origin = req.headers.origin;
    if (origin !== undefined && !originAllowed(origin, deps.allowedOrigins ?? [])) {
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return true;
    }
    wss.handleUpgrade(req, socket, head, (client) => void serve(deps, client, resolve));
    return true;
  };
  return { upgrade, close: () => wss.close() };
}

/** An HTTP answer instead of the upgrade: the error envelope, nothing relayed. */
export function refuseUpgrade(socket: Duplex, error: SbxError): void {
  socket.on('error', () => socket.destroy());
  const requestId = `req_${randomUUID()}`;
  const body = JSON.stringify(error.toEnvelope(requestId));
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\nContent-Type: application/json\r\n` +
      `X-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

async function serve(deps: SandboxSessionSocketDeps, client: WebSocket, resolve: Resolve) {
  // ws reports a protocol error (a frame over 1 MiB, text that is not UTF-8) after it sent its
  // close frame (1009, 1007): terminating now would reset the connection under that frame, and
  // the caller would see 1006. The closing handshake ends it; ws cuts a peer that never answers.
  client.on('error', () => {
    if (client.readyState !== client.CLOSING) client.terminate();
  });
  try {
    const { token, held } = await firstAuthFrame(client);
    const { target, context, agentPath, route, firstFrame } = await resolve(token);
    const outcome = await relayWebSocket(client, target, agentPath, {
      pending: held.take(),
      ...(firstFrame === undefined ? {} : { firstFrame }),
    });
    // The agent refused a kept token (its jti revoked): the next socket gets a new one.
    if (outcome.tokenRefused === true) deps.resources.retireRelayToken(target.jti);
    await deps.audit.record(
      'sandbox.relay',
      outcome.closeCode === 1000 ? 'ok' : `WS_${outcome.closeCode}`,
      context,
      {
        sandboxId: target.sandbox.id,
        jti: target.jti,
        detail: { route, close_code: outcome.closeCode },
      },
    );
  } catch (err) {
    const error = SbxError.from(err);
    if (error.status >= 500) deps.logger.warn({ err }, 'sandbox socket could not be relayed');
    const code = error.status >= 500 ? WS_CLOSE_CODES.INTERNAL_ERROR : WS_CLOSE_CODES.POLICY_VIOLATION;
    // Held frames paused the socket; the closing handshake needs it read again.
    client.resume();
    if (client.readyState === client.OPEN) {
      client.send(JSON.stringify({ type: 'error', ...error.toEnvelope() }));
      client.close(code, wsCloseReason(error.message));
    }
  }
}

interface FirstFrame {
  readonly token: string;
  /** What the caller sends while the broker checks it: kept, in order, for the agent. */
  readonly held: ReturnType<typeof holdFrames>;
}

/** The token of the caller's first message, `{type:'auth', token}`, within the auth timeout. */
function firstAuthFrame(client: WebSocket): Promise<FirstFrame> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new SbxError('UNAUTHENTICATED', 'no auth frame in time')),
      AUTH_TIMEOUT_MS,
    );
    const onMessage = (data: RawData) => {
      clearTimeout(timer);
      client.off('message', onMessage);
      client.off('close', onClose);
      const held = holdFrames(client);
      const token = authFrameToken(bufferOf(data))?.token;
      if (typeof token === 'string') resolve({ token, held });
      else reject(new SbxError('UNAUTHENTICATED', 'the first message must be {"type":"auth","token":…}'));
    };
    const onClose = () => {
      clearTimeout(timer);
      reject(new SbxError('UNAUTHENTICATED', 'closed before auth'));
    };
    client.on('message', onMessage);
    client.once('close', onClose);
  });
}
