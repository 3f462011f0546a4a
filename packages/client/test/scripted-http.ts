// A real HTTP server on port 0 that answers every request with the current `answer`, for
// answers a real broker or agent never gives (malformed bodies, a proxy's error pages).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedAnswer {
  readonly status: number;
  readonly contentType?: string;
  readonly body: string;
}

export interface ScriptedHttp {
  readonly url: string;
  /** What every request gets until it is set again. */
  answer: ScriptedAnswer;
  /** Requests served so far. */
  readonly seen: { count: number };
  close(): Promise<void>;
}

export async function startScriptedHttp(answer: ScriptedAnswer): Promise<ScriptedHttp> {
  const seen = { count: 0 };
  const server: Server = createServer((req, res) => {
    seen.count++;
    req.resume();
    const { status, contentType, body } = scripted.answer;
    res.writeHead(status, contentType === undefined ? {} : { 'content-type': contentType });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const scripted: ScriptedHttp = {
    url: `http://127.0.0.1:${port}`,
    answer,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return scripted;
}
