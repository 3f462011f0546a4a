/**
 * The relay's floor, the least any relay must do: a bare node:http reverse proxy in a process
 * of its own that forwards every request, path, headers and body as they are, to `PROXY_TARGET`
 * (the sandbox's agent) on a kept-alive connection, and pipes the answer back. No
 * authentication, no database, no token: what the broker's relay adds beyond this is its own.
 * Prints `{"port": …}` once listening.
 */
import { Agent, createServer, request } from 'node:http';
import { pipeline } from 'node:stream';

const target = new URL(process.env['PROXY_TARGET'] ?? 'http://127.0.0.1:1');
const upstreamAgent = new Agent({ keepAlive: true });

const server = createServer((req, res) => {
  const headers = { ...req.headers, host: target.host };
  delete headers.connection;
  const upstream = request(
    {
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers,
      agent: upstreamAgent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      pipeline(answer, res, () => undefined);
    },
  );
  upstream.on('error', () => res.destroy());
  pipeline(req, upstream, () => undefined);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  console.log(JSON.stringify({ port: address.port }));
});
// A clean exit on SIGTERM, so that `--cpu-prof` writes its profile.
process.once('SIGTERM', () => process.exit(0));
