/**
 * Answers of the agent's files and exec APIs: the `@sbx/protocol` types, which the agent
 * validates its requests with and the SDK parses its answers with. `ExecResult`,
 * `ProcessOutput` and `ProcessExitStatus` are the SDK's names for three of them.
 */
export type {
  DirectoryListing,
  ExecResponse as ExecResult,
  FileEntry,
  FollowExitLine as ProcessExitStatus,
  FollowOutputLine,
  PathInfo,
  ProcessInfo,
  ProcessOutputResponse as ProcessOutput,
  SandboxInfo,
  StreamOutput,
} from '@sbx/protocol';
