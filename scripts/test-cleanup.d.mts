// Types of test-cleanup.mjs (the runner imports it as plain JavaScript).
// pg and ioredis resolve from services/broker only, so their clients are described here.

export interface PostgresClient {
  query(text: string, values?: readonly unknown[]): Promise<{ rows: unknown[] }>;
}

type RedisArgument = string | number | Uint8Array;

export interface RedisClient {
  call(command: string, ...args: RedisArgument[]): Promise<unknown>;
  callBuffer(command: string, ...args: RedisArgument[]): Promise<unknown>;
}

export interface CleanupReport {
  /** Names of the databases dropped. */
  readonly databases: string[];
  /** How many Redis keys were deleted. */
  readonly redisKeys: number;
  /** One line per server that could not be cleaned (unreachable, refused). */
  readonly errors: string[];
}

export declare const TEST_DATABASE_ADMIN_URL: string;
export declare const TEST_REDIS_URL: string;
export declare function withPostgres<T>(fn: (client: PostgresClient) => Promise<T>): Promise<T>;
export declare function withRedis<T>(fn: (redis: RedisClient) => Promise<T>): Promise<T>;
export declare function listTestDatabases(client: PostgresClient): Promise<string[]>;
export declare function dropRunResources(run: string): Promise<CleanupReport>;
export declare function sweepStaleTestResources(options?: {
  readonly now?: number;
  readonly maxAgeMs?: number;
}): Promise<CleanupReport>;
