/**
 * The floors' server side, run as its own process so that floor and agent are measured
 * with the same topology (client here, server in another process): a bare HTTP server
 * answering 204, and a raw TCP server that streams the file whose absolute path the
 * client sends as its first line. Prints `{"http":port,"tcp":port}` once listening.
 */
import { createReadStream } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
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

const http = createHttpServer((_req, res) => {
  res.statusCode = 204;
  res.end();
});
const tcp = createTcpServer(streamRequestedFile);

await Promise.all([
  new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve)),
  new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve)),
]);
process.stdout.write(`${JSON.stringify({ http: portOf(http.address()), tcp: portOf(tcp.address()) })}\n`);
