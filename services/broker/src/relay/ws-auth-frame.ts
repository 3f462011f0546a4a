import { MAX_FRAME_BYTES } from '@sbx/protocol';

/**
 * The token of a caller's `auth` frame, or undefined for any other message. JSON can spell
 * `auth` with escapes (`"a\u0075th"`) and pad it with whitespace, so the test is a parse;
 * the prefilter only skips frames that cannot be one (no "auth", no escape), which is
 * nearly all stdin. Frames over MAX_FRAME_BYTES the agent refuses (1009) unread.
 */
export function authFrameToken(data: Buffer): { token: unknown } | undefined {
  if (data.length > MAX_FRAME_BYTES) return undefined;
  if (!data.includes('auth') && !data.includes('\\u')) return undefined;
  let frame: unknown;
  try {
    frame = JSON.parse(data.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof frame !== 'object' || frame === null || !('type' in frame) || frame.type !== 'auth')
    return undefined;
  return { token: 'token' in frame ? frame.token : undefined };
}
