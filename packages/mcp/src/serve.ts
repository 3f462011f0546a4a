// `@sbx/mcp/serve`: the two ways to serve the tools, for a process that serves one of them (as
// `sbx mcp` does). Unlike the package's index, it does not import the Streamable HTTP transport:
// `startMcpHttpServer` here loads it when it is called, so serving stdio never loads it (nor
// the HTTP adapter under it, which makes Node load its fetch implementation on import).
export type { BearerProvider } from './environments.js';
export type { RunningStdio, StdioOptions } from './server.js';
// Answers `initialize` before the SDK loads (early-initialize.ts).
export { serveStdioEarly as serveStdio } from './early-initialize.js';
export { startMcpHttpServer } from './start-http.js';
export type { HttpOptions, RunningHttp } from './http.js';
