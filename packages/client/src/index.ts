export * from './errors.js';
export { TransportError } from './http-errors.js';
export { ProtocolError, type ProtocolErrorOptions } from './protocol-error.js';
export { readEnvDefaults, type EnvDefaults } from './client-config.js';
export { DEFAULT_RETRY_POLICY, backoffDelayMs, isRetryable, type RetryPolicy } from './retry.js';
export type { CallOptions } from './http-client.js';
export { RefreshingCredentials, refreshDueAt, type Credential, type TokenSource } from './credentials.js';
export {
  BrokerClient,
  NEGOTIATE_TIMEOUT_MS,
  type BrokerClientOptions,
  type NegotiateOptions,
  type NegotiateTarget,
} from './broker-client.js';
export { BrokerSession, type SessionOptions } from './broker-session.js';
export {
  EXECUTE_CODE_MARGIN_MS,
  executeCodeHint,
  type CodeToRun,
  type ExecuteCodeCall,
  type ExecuteCodeTarget,
} from './execute-code.js';
export type {
  CapDimension,
  ExecuteCodeError,
  ExecuteCodeExitStatus,
  ExecuteCodeLanguage,
  ExecuteCodeResult,
} from '@sbx/protocol';
export { DEFAULT_WORKSPACE_PATH, workspacePathOf } from './workspace.js';
export { DEFAULT_KEEP_ALIVE, type KeepAlive } from './keep-alive.js';
export { SandboxClient, type SandboxClientOptions, type SandboxEndpoints } from './sandbox-client.js';
export { FilesApi, type WriteOptions } from './files-api.js';
export { FileWatch, type WatchEvent, type WatchOptions } from './file-watch.js';
export { ExecApi, type Command, type CommandOptions, type OutputOptions } from './exec-api.js';
export { ExecStream, type ExecExit, type ExecStreamOptions } from './exec-stream.js';
export { OutputFollow, type OutputChunk } from './output-follow.js';
export { Shell, type ShellExit, type ShellOptions } from './shell.js';
export type * from './dataplane-types.js';
