import { createServer } from 'node:http';
import {
  applyServerLimits,
  ConfigError,
  createLogger,
  MAX_HEADER_BYTES,
  prettyDestination,
  type DestinationStream,
  type Logger,
} from '@sbx/service-kit';
import { createBrokerSystem, type BrokerSystem } from './broker-system.js';
import { loadBrokerConfig, type BrokerConfig } from './config.js';
import { BROKER_VERSION } from './version.js';

const now = (): number => Date.now();
const LOOPBACK = '127.0.0.1';

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** Without isolation user code runs as the broker's user: such a broker is never reachable off this host. */
function hostFor(config: BrokerConfig, system: BrokerSystem, logger: Logger): string {
  if (system.isolation !== 'none') return config.host;
  logger.warn(
    'NO ISOLATION: bubblewrap is not available, so sandbox processes run unconfined as this user. ' +
      'The broker listens on loopback only and every session reports isolation "none". ' +
      'Install bubblewrap (apt-get install bubblewrap) for confined sandboxes.',
  );
  return isLoopback(config.host) ? config.host : LOOPBACK;
}

async function listen(server: ReturnType<typeof createServer>, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('broker is not listening on TCP');
  return address.port;
}

function banner(url: string, config: BrokerConfig, system: BrokerSystem): string {
  const database =
    config.databaseUrl === undefined ? `embedded PGlite under ${config.dataDir}` : 'Postgres (DATABASE_URL)';
  const lines = [
    '',
    `sbx broker ${BROKER_VERSION} listening on ${url}`,
    `  database:  ${database}`,
    `  isolation: ${system.isolation}`,
  ];
  if (system.generatedAdminKey !== undefined) {
    lines.push(`  admin API key (shown once, store it now): ${system.generatedAdminKey}`);
  }
  return `${lines.join('\n')}\n\n`;
}

/** Pretty lines for a person at a terminal (or LOG_FORMAT=pretty); JSON lines for collectors. */
async function logDestination(config: BrokerConfig): Promise<DestinationStream | undefined> {
  const format = config.logFormat ?? (process.stdout.isTTY ? 'pretty' : 'json');
  return format === 'pretty' ? prettyDestination(process.stdout) : undefined;
}

async function main(): Promise<void> {
  const config = loadBrokerConfig();
  const logger = createLogger({
    service: 'broker',
    level: config.logLevel,
    destination: await logDestination(config),
  });
  const system = await createBrokerSystem(config, logger, now);
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, system.app);
  system.attach(server);
  applyServerLimits(server);
  const host = hostFor(config, system, logger);
  const port = await listen(server, host, config.port);
  const url = config.publicUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const stop = (signal: string): void => {
    logger.info({ signal }, 'broker stopping');
    server.closeAllConnections();
    server.close();
    void system.close().then(() => logger.flush(() => process.exit(0)));
  };
  // Before anyone is told where the broker is: a SIGTERM right after the banner stops it cleanly.
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  logger.info({ url, isolation: system.isolation }, 'broker listening');
  process.stdout.write(banner(url, config, system));
}

main().catch((err: unknown) => {
  // A refused configuration is a message for the operator, not a stack trace.
  process.stderr.write(`${err instanceof ConfigError || err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
