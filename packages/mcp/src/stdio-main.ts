// The MCP server over stdio without the CLI: `node --import tsx packages/mcp/src/stdio-main.ts`
// with SBX_BROKER_URL and SBX_API_KEY (an API key or an OIDC access token) of the user who
// starts it. `sbx mcp` is the same server with the CLI's stored login (refreshed OIDC tokens).
import { serveStdio } from './server.js';
import { loadStdioConfig } from './stdio-config.js';

const config = loadStdioConfig();
if ('missing' in config) {
  process.stderr.write(`sbx-mcp: set ${config.missing.join(' and ')}\n`);
  process.exit(2);
}
const running = await serveStdio({
  brokerUrl: config.brokerUrl,
  bearer: () => config.credential,
  ...(config.actorId === undefined ? {} : { actor: { type: 'agent', id: config.actorId } }),
});
await running.closed;
process.exit(0);
