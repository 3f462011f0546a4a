// The MCP server over stdio without the CLI: `node --import tsx packages/mcp/src/stdio-main.ts`
// with SBX_BROKER_URL and SBX_API_KEY (an API key or an OIDC access token) of the user who
// starts it. `sbx mcp` is the same server with the CLI's stored login (refreshed OIDC tokens).
import { serveStdio } from './server.js';

const brokerUrl = process.env['SBX_BROKER_URL']?.trim();
const credential = process.env['SBX_API_KEY']?.trim();
if (brokerUrl === undefined || brokerUrl === '' || credential === undefined || credential === '') {
  process.stderr.write('sbx-mcp: set SBX_BROKER_URL and SBX_API_KEY\n');
  process.exit(2);
}
const actorId = process.env['SBX_MCP_ACTOR']?.trim();
const running = await serveStdio({
  brokerUrl,
  bearer: () => credential,
  ...(actorId === undefined || actorId === '' ? {} : { actor: { type: 'agent', id: actorId } }),
});
await running.closed;
process.exit(0);
