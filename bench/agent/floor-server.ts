/**
 * The floors' server side, run as its own process so that floor and agent are measured
 * with the same topology (client here, server in another process): a bare HTTP server
 * answering 204 (and `GET /file?path=<absolute path>` with the file, as a bare node file
 * server would: `createReadStream(path).pipe(res)`, defaults throughout), and a raw TCP
 * server that streams the file whose absolute path the client sends as its first line.
 * Prints `{"http":port,"tcp":port}` once listening.
 */
import { createReadStream, statSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';

function portOf(address: AddressInfo | string | null): number {
  if (address === null || typeof address === 'string') throw new Error('not listening on TCP');
  return address.port;
}

function streamRequestedFile(socket: Socket): void {
  let pending = '';
  const onData = (chunk: Buffer): void => {
    pending += chunk.toString('utf8');
    const newline = pending.indexOf('\n');
    if (newline < 0) return;
    socket.off('data', onData);
    createReadStream(pending.slice(0, newline)).pipe(socket);
  };
  socket.on('data', onData);
  socket.on('error', () => socket.destroy());
}

function serveFile(file: string, res: ServerResponse): void {
  res.setHeader('Content-Length', statSync(file).size);
  res.setHeader('Content-Type', 'application/octet-stream');
  createReadStream(file).pipe(res);
}

const http = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
  const file =
    req.url?.startsWith('/file?') === true ? new URL(req.url, 'http://x').searchParams.get('path') : null;
  if (file !== null) {
    serveFile(file, res);
    return;
  }
  res.statusCode = 204;
  res.end();
});
const tcp = createTcpServer(streamRequestedFile);

await Promise.all([
  new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve)),
  new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve)),
]);
process.stdout.write(`${JSON.stringify({ http: portOf(http.address()), tcp: portOf(tcp.address()) })}\n`);
