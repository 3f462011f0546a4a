import type { HttpOptions, RunningHttp } from './http.js';

/**
 * `startMcpHttpServer` of http.ts, which it loads when called (see serve.ts): listens on
 * `host` (default 127.0.0.1) and `port` (default 0: any free port).
 */
export async function startMcpHttpServer(
  options: HttpOptions & { readonly host?: string; readonly port?: number },
): Promise<RunningHttp> {
  const http = await import('./http.js');
  return http.startMcpHttpServer(options);
}
