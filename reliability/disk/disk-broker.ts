// A broker whose whole data directory is on a small disk of the suite's own: the embedded
// database (PGlite's files under `<root>/broker/pglite`, as `openDatabase({ dataDir })` keeps
// them in production) and the local provider's data directory (`<root>/local`: workspace
// images, sandbox state, the agent bundle). Sandboxes are real bubblewrap agents with
// workspace volumes of the tenant's `max_disk_mb`.
import { execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { BrokerClient } from '../../packages/client/src/index.js';
import { LocalProvider } from '../../services/broker/src/providers/local-provider.js';
import { openDatabase, type Database } from '../../services/broker/src/store/database.js';
import {
  ALL_CALLER_SCOPES,
  startBrokerHarness,
  type BrokerHarness,
} from '../../services/broker/test/support/broker-harness.js';
import { captureLogger } from '../../services/broker/test/providers/local-provider-kit.js';
import { migratedTemplate } from '../../services/broker/test/support/test-database.js';

export interface DiskBroker {
  readonly harness: BrokerHarness<LocalProvider>;
  readonly database: Database;
  /** Every caller scope: admin routes included. */
  readonly adminKey: string;
  /** With `adminKey`, never retrying: each call is one request. */
  readonly client: BrokerClient;
  /** Closes the broker, its provider (stopping every agent) and the database; the files stay. */
  close(): Promise<void>;
}

export interface DiskBrokerOptions {
  /** Where the broker keeps everything (a directory on the small disk). */
  readonly dataDir: string;
  /** The tenant's `max_disk_mb`: each workspace volume's size. */
  readonly workspaceMb: number;
  /** What the provider keeps free of workspace promises. */
  readonly reserveBytes: number;
  /** Workspace images take their whole size when made (the provider's `preallocateWorkspaces`). */
  readonly preallocate: boolean;
}

export async function startDiskBroker(options: DiskBrokerOptions): Promise<DiskBroker> {
  const dataDir = path.join(options.dataDir, 'broker');
  await seedDatabase(dataDir);
  const database = await openDatabase({ dataDir });
  let provider: LocalProvider | undefined;
  try {
    provider = await LocalProvider.open({
      dataDir: path.join(options.dataDir, 'local'),
      logger: captureLogger([]),
      isolation: 'bubblewrap',
      diskReserve: { minBytes: options.reserveBytes, fraction: 0 },
      preallocateWorkspaces: options.preallocate,
      // The default 15 s was passed at a load of 15 on two cores; what is tested here is disks.
      startTimeoutMs: 60_000,
    });
    const harness = await startBrokerHarness({ database, provider, logLevel: 'warn' });
    await harness.repositories.policies.upsertTenantPolicy(harness.tenantId, {
      maxDiskMb: options.workspaceMb,
    });
    const adminKey = await harness.apiKey({ scopes: ALL_CALLER_SCOPES });
    const client = new BrokerClient({
      baseUrl: harness.url,
      apiKey: adminKey,
      retry: { maxAttempts: 1, baseDelayMs: 50, maxDelayMs: 50 },
    });
    const opened = provider;
    return {
      harness,
      database,
      adminKey,
      client,
      async close() {
        // Each part closes even when the one before failed: agents and files must be let go.
        try {
          await harness.close();
        } finally {
          try {
            await opened.close();
          } finally {
            await database.close();
          }
        }
      },
    };
  } catch (err) {
    await provider?.close();
    await database.close();
    throw err;
  }
}

/**
 * PGlite's files under `<dataDir>/pglite`, migrated: the template the store tests cache (a
 * tar of PGlite's data directory), unpacked. initdb and the migrations cost 15 s on a loaded
 * 2-core machine, this well under one; the broker then opens the files as its own.
 */
async function seedDatabase(dataDir: string): Promise<void> {
  const location = path.join(dataDir, 'pglite');
  await mkdir(location, { recursive: true });
  const template = Buffer.from(await (await migratedTemplate()).arrayBuffer());
  execFileSync('tar', ['-x', '-C', location], { input: template, stdio: ['pipe', 'ignore', 'ignore'] });
}
