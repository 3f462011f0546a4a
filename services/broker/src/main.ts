import { createServer } from 'node:http';
import { ConfigError, createLogger, type Logger } from '@sbx/service-kit';
import { createCoordination } from './adapters/redis/create-coordination.js';
import { loadBrokerConfig, type BrokerConfig } from './config.js';
import { createApp } from './http/app.js';
import { openDatabase } from './store/database.js';
import { BROKER_VERSION } from './version.js';

const now = (): number => Date.now();

function describeDatabase(config: BrokerConfig): string {
  return config.databaseUrl === undefined
    ? `embedded PGlite under ${config.dataDir}`
    : 'Postgres (DATABASE_URL)';
}

async function listen(server: ReturnType<typeof createServer>, config: BrokerConfig): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('broker is not listening on TCP');
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;
  return config.publicUrl ?? `http://${host}:${address.port}`;
}

async function main(): Promise<void> {
  const config = loadBrokerConfig();
  const logger: Logger = createLogger({ service: 'broker', level: config.logLevel });
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    migrate: true,
  });
  if (database.appliedMigrations.length > 0)
    logger.info({ migrations: database.appliedMigrations }, 'applied migrations');
  const coordination = await createCoordination({
    redisUrl: config.redisUrl,
    keyPrefix: 'sbx',
    onError: (err) => logger.warn({ err }, 'coordination error'),
  });
  if (coordination.warning !== undefined) logger.warn(coordination.warning);

  const app = createApp({
    logger,
    version: BROKER_VERSION,
    startedAt: now(),
    now,
    probes: [
      { name: 'database', check: () => database.ping() },
      { name: 'coordination', check: async () => void (await coordination.get('health')) },
    ],
  });
  const server = createServer(app);
  const url = await listen(server, config);
  logger.info(
    { url, database: describeDatabase(config), coordination: coordination.kind },
    'broker listening',
  );
  process.stdout.write(
    `\nsbx broker ${BROKER_VERSION} listening on ${url}\n  database: ${describeDatabase(config)}\n\n`,
  );

  const stop = (signal: string): void => {
    logger.info({ signal }, 'broker stopping');
    server.closeAllConnections();
    server.close();
    void Promise.allSettled([coordination.close(), database.close()]).then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  // A refused configuration is a message for the operator, not a stack trace.
  process.stderr.write(`${err instanceof ConfigError || err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
