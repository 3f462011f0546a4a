/**
 * The least an Express route that relays a command does, for context: express.json() reads
 * the body, one route forwards it to `PROXY_TARGET`'s `/v1/exec` with the caller's
 * Authorization over a kept-alive connection (the broker's own `postJson`), and
 * `res.send` answers the agent's body. No request id, log, security headers, CORS,
 * authentication, rate limit, validation, token or audit: what the broker's relay costs
 * beyond this is its own; what this costs beyond the bare proxy (pipe-proxy.ts) is Express's.
 * Prints `{"port": …}` once listening.
 */
import express from 'express';
import { postJson } from '../../services/broker/src/adapters/agent-http/post-json.js';

const target = process.env['PROXY_TARGET'] ?? 'http://127.0.0.1:1';
const ANSWER_MS = 60_000;

const app = express();
app.use(express.json());
app.post('/v1/exec', async (req, res) => {
  const answer = await postJson(
    new URL(`${target}/v1/exec`),
    { authorization: req.get('authorization') ?? '' },
    JSON.stringify(req.body),
    ANSWER_MS,
  );
  res.status(answer.status).type('application/json').send(answer.text);
});
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  console.log(JSON.stringify({ port: address.port }));
});
server.keepAliveTimeout = 60_000;
// A clean exit on SIGTERM, so that `--cpu-prof` writes its profile.
process.once('SIGTERM', () => process.exit(0));
