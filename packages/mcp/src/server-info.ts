// What the server says of itself in its `initialize` answer, apart from the SDK so that the
// early answer (early-initialize.ts) can give it without loading the SDK.
export const SERVER_INFO = { name: 'sbx-sandbox', version: '0.1.0' } as const;

export const SERVER_INSTRUCTIONS =
  'Sandboxes bound to threads. Call environment_acquire with a thread_id, then the file, command and ' +
  "execute_code tools. Paths are relative to the workspace (the acquire answer's workspace_path), or " +
  'absolute anywhere in the sandbox, e.g. /tmp/x, as its commands see them. environment_release when done.';

/** The capabilities the SDK's McpServer announces once tools are registered. */
export const SERVER_CAPABILITIES = { tools: { listChanged: true } } as const;

/** The SDK's SUPPORTED_PROTOCOL_VERSIONS, newest first (a test keeps them equal). */
export const SUPPORTED_PROTOCOL_VERSIONS = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
];
