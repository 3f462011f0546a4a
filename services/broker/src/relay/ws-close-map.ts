import { WS_CLOSE_CODES, wsCloseReason } from '@sbx/protocol';

/** RFC 6455 1001: the endpoint is going away. */
export const GOING_AWAY = 1001;
/** RFC 6455 1005: a close frame without a code (never sent on the wire). */
const NO_STATUS = 1005;
/** RFC 6455 1006: the connection dropped without a close frame (never sent on the wire). */
export const ABNORMAL = 1006;
/** RFC 6455 1013: try again later. */
export const TRY_AGAIN_LATER = 1013;

/** Codes a close frame may carry (RFC 6455 §7.4, as `ws` validates them). */
export function sendable(code: number): boolean {
  return (
    (code >= 1000 && code <= 1014 && code !== 1004 && code !== NO_STATUS && code !== ABNORMAL) ||
    (code >= 3000 && code <= 4999)
  );
}

/**
 * The code the caller gets when the agent closed: the agent's own (1000, 1008, 4401 …), so a
 * relayed client behaves as a direct one; no code at all reads as a normal closure; a dropped
 * connection (1006) or a code that cannot be sent becomes 1011, "the server failed".
 */
export function callerCodeFor(agentCode: number): number {
  if (agentCode === NO_STATUS) return WS_CLOSE_CODES.NORMAL;
  return sendable(agentCode) ? agentCode : WS_CLOSE_CODES.INTERNAL_ERROR;
}

/** The code the agent gets when the caller closed: the caller's own, else 1001 (went away). */
export function agentCodeFor(callerCode: number): number {
  return sendable(callerCode) ? callerCode : GOING_AWAY;
}

/** A close reason received (a Buffer) or made, as one that can be sent on. */
export function reasonOf(reason: Buffer | string): string {
  return wsCloseReason(typeof reason === 'string' ? reason : reason.toString('utf8'));
}
