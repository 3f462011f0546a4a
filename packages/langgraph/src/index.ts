export { SbxSandbox } from './sandbox.js';
export { SbxSandboxError, type SbxSandboxErrorCode } from './errors.js';
export {
  DEFAULT_ACTOR_ID,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_TIMEOUT_MS,
  workspacePrompt,
  type SbxSandboxOptions,
} from './options.js';
export { STATE_ROUTES, sandboxWithStateRoutes } from './composite.js';
export { TIMEOUT_EXIT_CODE } from './execute.js';
export type { ThreadSandbox } from './sessions.js';
export {
  EXECUTE_CODE_DESCRIPTION,
  EXECUTE_CODE_TOOL_NAME,
  createExecuteCodeTool,
  executeCodeToolText,
  type ExecuteCodeTool,
  type ExecuteCodeToolArgs,
  type ExecuteCodeToolOptions,
  type ExecuteCodeToolView,
} from './execute-code-tool.js';
