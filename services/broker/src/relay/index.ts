// The broker's data-plane relay (docs/relay.md): carries a caller's HTTP and WebSocket traffic
// to a sandbox's agent when the caller cannot reach the agent itself. Routes mount it.
export { relayHttp } from './relay-http.js';
export { relayWebSocket } from './relay-ws.js';
export { bufferOf, holdFrames } from './ws-pump.js';
export { authFrameToken } from './ws-auth-frame.js';
export { callerCodeFor, agentCodeFor } from './ws-close-map.js';
export { upstreamRequestHeaders, downstreamResponseHeaders } from './relay-headers.js';
export type {
  BackpressureDirection,
  HeldFrame,
  HttpRelayOutcome,
  RelayHttpOptions,
  RelayOutcome,
  RelayTarget,
  RelayWsOptions,
  WsRelayOutcome,
} from './relay-types.js';
