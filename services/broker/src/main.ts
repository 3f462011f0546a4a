import { createServer, type Server } from 'node:http';
import { inspect } from 'node:util';
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
import { IDLE_LOCAL_SANDBOX_MIB } from './broker-warm-pool.js';
import { loadBrokerConfig, type BrokerConfig } from './config.js';
import { checkPortFree, listenProblem } from './listen-port.js';
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

async function listen(server: Server, host: string, port: number): Promise<number> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (err) {
    // Free when checked before the migrations, taken since: the same one-line answer.
    throw listenProblem(err, host, port);
  }
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('broker is not listening on TCP');
  return address.port;
}

function banner(
  url: string,
  config: BrokerConfig,
  system: BrokerSystem,
  adminKey: string | undefined,
): string {
  const database =
    config.databaseUrl === undefined ? `embedded PGlite under ${config.dataDir}` : 'Postgres (DATABASE_URL)';
  const lines = [
    '',
    `sbx broker ${BROKER_VERSION} listening on ${url}`,
    `  database:  ${database}`,
    `  isolation: ${system.isolation}`,
  ];
  const warm = system.warmPoolSize;
  if (warm > 0) {
    const memory = `~${warm * IDLE_LOCAL_SANDBOX_MIB} MiB`;
    lines.push(
      `  warm pool: ${warm} sandbox${warm === 1 ? '' : 'es'} kept ready (${memory}; WARM_POOL_SIZE=0 turns it off)`,
    );
  }
  if (adminKey !== undefined) lines.push(`  admin API key (shown once, store it now): ${adminKey}`);
  return `${lines.join('\n')}\n\n`;
}

/** Resolves once standard output took `text`; rejects when it cannot (a full disk, a closed pipe). */
function print(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    // The stream reports a failed write twice: to the callback, then as 'error' (fatal unheard).
    process.stdout.once('error', reject);
    process.stdout.write(text, (err) => {
      if (err !== null && err !== undefined) return;
      process.stdout.removeListener('error', reject);
      resolve();
    });
  });
}

/** Pretty lines for a person at a terminal (or LOG_FORMAT=pretty); JSON lines for collectors. */
async function logDestination(config: BrokerConfig): Promise<DestinationStream | undefined> {
  const format = config.logFormat ?? (process.stdout.isTTY ? 'pretty' : 'json');
  return format === 'pretty' ? prettyDestination(process.stdout) : undefined;
}

/** Listens, then tells the operator where the broker is. */
async function serve(config: BrokerConfig, system: BrokerSystem, logger: Logger): Promise<void> {
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
  await announce(url, config, system, logger);
}

/** Makes the first start's admin key, only now (broker-admin-key.ts says why), and prints it at once. */
async function announce(
  url: string,
  config: BrokerConfig,
  system: BrokerSystem,
  logger: Logger,
): Promise<void> {
  const adminKey = await system.issueAdminKey();
  logger.info({ url, isolation: system.isolation, warmPoolSize: system.warmPoolSize }, 'broker listening');
  await print(banner(url, config, system, adminKey?.key)).catch(async (err: unknown) => {
    // A key nobody saw is withdrawn, so that the next start makes and prints another.
    await adminKey?.withdraw().catch(() => undefined);
    const why = err instanceof Error ? err.message : String(err);
    const kept = adminKey === undefined ? '' : ': no admin key was kept';
    throw new Error(`could not print the banner (${why})${kept}`);
  });
}

async function main(): Promise<void> {
  const config = loadBrokerConfig();
  const logger = createLogger({
    service: 'broker',
    level: config.logLevel,
    destination: await logDestination(config),
  });
  // Before the migrations: a taken port is answered at once, and nothing is made for nothing.
  await checkPortFree(config.host, config.port);
  const system = await createBrokerSystem(config, logger, now);
  try {
    await serve(config, system, logger);
  } catch (err) {
    // Its sandboxes (the warm pool's among them) end with it, rather than outlive the exit.
    await system.close().catch(() => undefined);
    throw err;
  }
}

/**
 * A failed start as one line for the operator, not a stack trace: the message and each cause's
 * ("could not build the sandbox agent" alone said nothing of why).
 */
function startFailure(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  const messages: string[] = [];
  for (let at: unknown = err; at !== undefined && messages.length < 8;) {
    const message = at instanceof Error ? at.message : typeof at === 'string' ? at : inspect(at);
    if (message !== '' && !messages.includes(message)) messages.push(message);
    at = at instanceof Error ? at.cause : undefined;
  }
  return messages.join(': ');
}

main().catch((err: unknown) => {
  process.stderr.write(`${startFailure(err)}\n`);
  process.exit(1);
});
