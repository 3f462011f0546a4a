// A process that hosts nothing but the HTTP relay, so that its resident memory is the relay's:
// the memory test streams 500 MiB through it and asks how far its RSS rose meanwhile.
// Run as `node --expose-gc --import tsx relay-host.ts` with RELAY_TARGET (JSON) in the
// environment; prints `{"port"}` once listening, then answers `mark` and `report` on stdin.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { relayHttp, type RelayTarget } from '../../src/relay/index.js';

const target = JSON.parse(process.env['RELAY_TARGET'] ?? '{}') as RelayTarget;
let baseline = process.memoryUsage.rss();
let peak = baseline;
// Sampled often: a relay that buffered the body would hold it for seconds, not milliseconds.
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);

const server = createServer((req, res) => {
  void relayHttp(req, res, target, (req.url ?? '/').slice('/dp'.length));
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});

const gc = (globalThis as { gc?: () => void }).gc;
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'mark') {
    gc?.();
    baseline = process.memoryUsage.rss();
    peak = baseline;
  }
  process.stdout.write(`${JSON.stringify({ baseline, peak })}\n`);
});
process.stdin.on('end', () => {
  clearInterval(sampler);
  server.closeAllConnections();
  server.close();
});
