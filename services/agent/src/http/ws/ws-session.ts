import type { WebSocket } from 'ws';
import type { ClientFrameFor, ServerFrameFor, WsEndpoint } from '@sbx/protocol';
import type { SbxError, CapabilityScope } from '@sbx/protocol';
import type { VerifiedCapability } from '@sbx/tokens';

/** Frames the hub handles itself and never forwards: authentication and keep-alive. */
export type EndpointFrame<E extends WsEndpoint> = Exclude<
  ClientFrameFor<E>,
  { type: 'auth' } | { type: 'ping' }
>;

/** An authenticated WebSocket, as an endpoint sees it. */
export interface WsSession<E extends WsEndpoint> {
  /** The newest verified capability; a later `auth` frame replaces it. */
  readonly capability: VerifiedCapability;
  /** The upgrade request's URL (legacy endpoints read their query from it). */
  readonly url: URL;
  /** Bytes queued on the socket and not yet written: the signal for flow control. */
  readonly bufferedAmount: number;
  readonly isOpen: boolean;
  has(scope: CapabilityScope): boolean;
  /** Sends a frame; `onWritten` runs once it has left for the socket (or failed). */
  send(frame: ServerFrameFor<E>, onWritten?: (err?: Error) => void): void;
  sendError(error: SbxError): void;
  /**
   * Holds what is sent until the end of this tick and then writes it to the network at once
   * (one writev instead of one per frame, and one wake-up of the peer).
   */
  coalesceWrites(): void;
  close(code: number, reason: string): void;
  /** The raw socket, for endpoints that stream binary-safe data through frames. */
  readonly socket: WebSocket;
}

export interface EndpointHandler<E extends WsEndpoint> {
  onFrame(frame: EndpointFrame<E>): void | Promise<void>;
  /** Routes with `rawFrames` receive each text message unparsed here instead of `onFrame`. */
  onText?(text: string): void | Promise<void>;
  /** The socket closed, whoever closed it. */
  onClose?(code: number): void;
}

export interface WsRoute<E extends WsEndpoint = WsEndpoint> {
  /** Exact pathnames served (e.g. `/v1/shell/ws` and its alias `/ws`). */
  readonly paths: readonly string[];
  readonly endpoint: E;
  /** A client may connect when its token grants any of these (directly or by implication). */
  readonly anyOf: readonly CapabilityScope[];
  /**
   * `first-frame` (default): the token arrives in the first message, never in the URL.
   * `query`: the legacy `?token=` (docs/protocol.md#legacy-endpoints); rejections use the legacy reasons.
   */
  readonly auth?: 'first-frame' | 'query';
  /**
   * Legacy clients (query auth only) speak their own message format: the hub hands
   * every text message to `onText` without parsing it as a protocol frame.
   */
  readonly rawFrames?: boolean;
  open(session: WsSession<E>): EndpointHandler<E>;
}
