// One deployment for a fault suite: broker processes (services/broker/test/process) on a
// Postgres and (optionally) a Redis of the suite's own (private-servers.ts), sharing a
// master key, an operator key and a data directory as replicas on one host do; the
// database opened by the test too, to read what the brokers recorded. Requests are timed.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from '@jest/globals';
import { openDatabase, type Database } from '../../services/broker/src/store/database.js';
import {
  operatorKey,
  startBrokerProcess,
  type BrokerProcess,
} from '../../services/broker/test/process/broker-process.js';
import {
  newDataDirOutsideTmp,
  removeDataDir,
} from '../../services/broker/test/providers/local-provider-kit.js';
import {
  startPrivatePostgres,
  startPrivateRedis,
  type PrivatePostgres,
  type PrivateRedis,
} from './private-servers.js';

/** SBX_RELIABILITY=long: the suites' long forms (reliability/README.md). */
export const LONG = process.env['SBX_RELIABILITY'] === 'long';

/** Setting up a deployment: initdb, migrations, broker starts with their agents. */
export const SETUP_MS = 240_000;

export interface Answer {
  readonly status: number;
  readonly body: unknown;
  /** The raw body text. */
  readonly text: string;
  readonly ms: number;
  readonly headers: Headers;
}

export interface Deployment {
  readonly postgres: PrivatePostgres;
  /** Present when the deployment was made with Redis. */
  readonly redis: PrivateRedis | undefined;
  readonly db: Database;
  readonly adminKey: string;
  readonly dataDir: string;
  /** Every broker started, killed ones included. */
  readonly brokers: BrokerProcess[];
  /** Starts one more replica (extra environment on top of the deployment's). */
  start(extra?: Record<string, string>): Promise<BrokerProcess>;
  /** A request with the operator key; never throws for an HTTP status, only for a lost connection. */
  call(
    broker: BrokerProcess,
    method: string,
    route: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Answer>;
}

export interface DeploymentOptions {
  readonly redis: boolean;
  /** Environment of every broker of the deployment. */
  readonly env?: Record<string, string>;
  /** Replicas started before the tests (default 2). */
  readonly replicas?: number;
}

/** A deployment for the enclosing describe block: made in beforeAll, taken down in afterAll. */
export function useDeployment(options: DeploymentOptions): () => Deployment {
  let deployment: Deployment | undefined;
  let teardown: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const made = await makeDeployment(options);
    deployment = made.deployment;
    teardown = made.teardown;
  }, SETUP_MS);
  afterAll(async () => {
    await teardown?.();
  }, SETUP_MS);
  return () => {
    if (deployment === undefined) throw new Error('the deployment is not up');
    return deployment;
  };
}

async function makeDeployment(
  options: DeploymentOptions,
): Promise<{ deployment: Deployment; teardown: () => Promise<void> }> {
  const postgres = await startPrivatePostgres();
  const redis = options.redis ? await startPrivateRedis() : undefined;
  const dataDir = newDataDirOutsideTmp();
  const adminKey = operatorKey();
  const brokers: BrokerProcess[] = [];
  let db: Database | undefined;
  const teardown = async (): Promise<void> => {
    await Promise.all(brokers.map((broker) => broker.kill('SIGTERM')));
    await db?.close().catch(() => undefined);
    await redis?.close();
    await postgres.close();
    removeDataDir(dataDir);
  };
  try {
    db = await openDatabase({ databaseUrl: postgres.url(), migrate: true, maxConnections: 4 });
    const env: Record<string, string> = {
      DATABASE_URL: postgres.url(),
      BROKER_MASTER_KEY: randomBytes(32).toString('base64url'),
      BROKER_BOOTSTRAP_API_KEY: adminKey,
      BROKER_DATA_DIR: dataDir,
      ...(redis === undefined
        ? {}
        : { REDIS_URL: redis.url, REDIS_KEY_PREFIX: `faults-${randomBytes(4).toString('hex')}` }),
      ...options.env,
    };
    const start = async (extra: Record<string, string> = {}): Promise<BrokerProcess> => {
      const broker = await startBrokerProcess({ ...env, ...extra });
      brokers.push(broker);
      return broker;
    };
    for (let i = 0; i < (options.replicas ?? 2); i += 1) await start();
    const call: Deployment['call'] = async (broker, method, route, body, headers = {}) => {
      const started = performance.now();
      const res = await fetch(`${broker.url}${route}`, {
        method,
        headers: {
          authorization: `Bearer ${adminKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const answerText = await res.text();
      const ms = performance.now() - started;
      let parsed: unknown = answerText;
      try {
        parsed = JSON.parse(answerText);
      } catch {
        // Not JSON: kept as text.
      }
      return { status: res.status, body: parsed, text: answerText, ms, headers: res.headers };
    };
    const deployment: Deployment = { postgres, redis, db, adminKey, dataDir, brokers, start, call };
    return { deployment, teardown };
  } catch (err) {
    await teardown();
    throw err;
  }
}

/** A field of a JSON answer, by path (`['sandbox', 'id']`); undefined when absent. */
export function field(body: unknown, ...path: string[]): unknown {
  let at: unknown = body;
  for (const key of path) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** The text of a JSON answer's field; throws naming the answer when it is missing. */
export function text(answer: Answer, ...path: string[]): string {
  const value = field(answer.body, ...path);
  if (typeof value !== 'string') throw new Error(`no ${path.join('.')} in ${answer.status} ${answer.text}`);
  return value;
}
