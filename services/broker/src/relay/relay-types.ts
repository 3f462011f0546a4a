import type { Agent as HttpAgent } from 'node:http';
import type { RawData } from 'ws';
import type { SbxError } from '@sbx/protocol';

/** Where to send one relayed call: the agent, and a capability token the broker minted for it. */
export interface RelayTarget {
  /** The agent's `http_base_url`, e.g. `http://10.0.0.7:41234` (a trailing slash is ignored). */
  readonly httpBaseUrl: string;
  /** The agent's `ws_base_url`, e.g. `ws://10.0.0.7:41234`. */
  readonly wsBaseUrl: string;
  /** Sent to the agent as `Authorization: Bearer …` or in the `auth` frame; never to the caller. */
  readonly token: string;
}

/** How a relayed HTTP call ended, for the route's audit record (with its jti). */
export interface HttpRelayOutcome {
  readonly kind: 'http';
  /** The status the caller was sent (the agent's, or 502/504 from the relay); 0: none was sent. */
  readonly status: number;
  /** Request body bytes passed to the agent. */
  readonly bytesIn: number;
  /** Response body bytes passed to the caller. */
  readonly bytesOut: number;
  readonly durationMs: number;
  /**
   * Absent: the exchange completed. `unreachable`/`timeout`: no answer from the agent (the
   * caller got 502/504); `client_gone`: the caller left first; `upstream_broken`: the agent's
   * answer broke off after its headers (the caller's connection was destroyed).
   */
  readonly failure?: 'unreachable' | 'timeout' | 'client_gone' | 'upstream_broken';
}

/** How a relayed WebSocket ended. */
export interface WsRelayOutcome {
  readonly kind: 'ws';
  /** The close code the caller's socket ended with (sent by the relay, or the caller's own). */
  readonly closeCode: number;
  readonly closeReason: string;
  /** The agent's close code as received (1006: no close frame); absent when it was never reached. */
  readonly agentCloseCode?: number;
  /** Who closed first: the agent, the caller, or the relay (agent unreachable). */
  readonly closedBy: 'agent' | 'client' | 'relay';
  /** Message payload bytes and messages caller → agent (the relay's `auth` frames not counted). */
  readonly bytesIn: number;
  readonly messagesIn: number;
  /** Message payload bytes and messages agent → caller. */
  readonly bytesOut: number;
  readonly messagesOut: number;
  /** Largest `bufferedAmount` seen on each side: what the relay held in memory at most. */
  readonly peakBufferedToClient: number;
  readonly peakBufferedToAgent: number;
  readonly durationMs: number;
  /** The agent could not be reached (1011) or refused the upgrade as overloaded (1013). */
  readonly failure?: 'unreachable' | 'overloaded';
  /**
   * The agent closed 1008 right after an `error` frame `UNAUTHENTICATED`: it refused the
   * relay's token (revoked, expired). The caller cannot cause this: its own `auth` frames
   * never reach the agent.
   */
  readonly tokenRefused?: boolean;
}

export type RelayOutcome = HttpRelayOutcome | WsRelayOutcome;

export interface RelayHttpOptions {
  /**
   * Until the agent's connection is established, and from the end of the request body until
   * the agent's response headers (default 30 s). The body and the response stream have none.
   */
  readonly headersTimeoutMs?: number;
  /** Connection pooling towards agents; default: Node's global agent. */
  readonly agent?: HttpAgent;
}

/** A message the route received before handing the socket over (see `holdFrames`). */
export interface HeldFrame {
  readonly data: RawData;
  readonly isBinary: boolean;
}

/** Which way the relay stopped reading: `toClient` paused the agent, `toAgent` paused the caller. */
export type BackpressureDirection = 'toClient' | 'toAgent';

export interface RelayWsOptions {
  /** Until the agent's upgrade completes (default 30 s); then the caller is closed 1011. */
  readonly connectTimeoutMs?: number;
  /** Pause reading one side once the other side's `bufferedAmount` exceeds this (default 1 MiB). */
  readonly highWaterBytes?: number;
  /** Largest message accepted from the agent (default 100 MiB, the ws default). */
  readonly maxPayloadBytes?: number;
  /** Messages the route took off `client` before the call, forwarded first, in order. */
  readonly pending?: readonly HeldFrame[];
  /**
   * A caller's `auth` frame (re-authentication) is never forwarded: it holds the caller's own
   * credential. This hook may check it and answer a fresh agent token, which the relay sends
   * upstream as `{type:'auth'}`; without it such frames are dropped.
   */
  readonly onClientAuth?: (token: unknown) => Promise<string | undefined> | string | undefined;
  /**
   * Sees the caller's first message for the agent (its `auth` frames aside) and answers what
   * to send instead (as text), or an error: the caller then gets it in an `error` frame and is
   * closed 1008, and nothing reaches the agent.
   */
  readonly firstFrame?: (data: Buffer, isBinary: boolean) => Buffer | SbxError;
  /** Called when the relay pauses (`true`) or resumes (`false`) a side, for metrics and tests. */
  readonly onBackpressure?: (direction: BackpressureDirection, paused: boolean) => void;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_HIGH_WATER_BYTES = 1024 * 1024;

/** `${base}${path}` with exactly one slash between; `path` must be absolute (and may carry a query). */
export function joinUrl(base: string, agentPath: string): URL {
  if (!agentPath.startsWith('/')) throw new TypeError(`agent path must start with "/": ${agentPath}`);
  return new URL(`${base.replace(/\/+$/, '')}${agentPath}`);
}
