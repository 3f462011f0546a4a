export {
  CallerEnvironments,
  type AcquireMode,
  type BearerProvider,
  type EnvironmentOptions,
} from './environments.js';
export { environmentView } from './environment-tools.js';
export { executeCodeAnswer } from './code-tools.js';
export { guarded, toolError, toolResult } from './results.js';
export {
  SERVER_INFO,
  TOOL_NAMES,
  createSandboxMcpServer,
  serveStdio,
  type RunningStdio,
  type ServerHooks,
  type StdioOptions,
} from './server.js';
export {
  bearerOf,
  createMcpHttpHandler,
  startMcpHttpServer,
  type HttpOptions,
  type McpRequestHandler,
  type RunningHttp,
} from './http.js';
export {
  A2A_ENVIRONMENT_KEY,
  toA2aTaskEnvironment,
  type A2aArtifact,
  type A2aEnvironmentMetadata,
  type A2aFilePart,
  type A2aTaskEnvironment,
  type SessionAnswer,
} from './a2a.js';
