import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SbxError } from '@sbx/protocol';

/** A tool's answer: the object as structured content, and as JSON text for hosts that read text only. */
export function toolResult(value: Record<string, unknown>, text?: string): CallToolResult {
  return {
    content: [{ type: 'text', text: text ?? JSON.stringify(value, null, 2) }],
    structuredContent: value,
  };
}

/**
 * A failure from the broker or the agent as an MCP tool error (`isError: true`), carrying the
 * protocol's error envelope `{ error: { code, message, retryable } }`. Anything that is not a
 * platform error is INTERNAL, its message withheld (it may describe the server, not the call).
 */
export function toolError(err: unknown, onInternal?: (err: unknown) => void): CallToolResult {
  if (!(err instanceof SbxError)) onInternal?.(err);
  const sbx = SbxError.from(err);
  const envelope = { code: sbx.code, message: sbx.message, retryable: sbx.retryable };
  return {
    isError: true,
    content: [{ type: 'text', text: `${sbx.code}: ${sbx.message}` }],
    structuredContent: { error: envelope },
  };
}

/** Runs a tool's body; whatever it throws becomes a tool error, never a failed request. */
export async function guarded(
  body: () => Promise<CallToolResult>,
  onInternal?: (err: unknown) => void,
): Promise<CallToolResult> {
  try {
    return await body();
  } catch (err) {
    return toolError(err, onInternal);
  }
}
