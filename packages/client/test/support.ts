// A real broker (test harness over Postgres) with the local provider, so sessions get
// real agents; records each sandbox's spec so a test can mint a short-lived token with
// the sandbox's own key.
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mintCapabilityToken } from '../../tokens/src/index.js';
import { captureLogger } from '../../../services/broker/test/providers/local-provider-kit.js';
import {
  ALL_CALLER_SCOPES,
  startBrokerHarness,
  type BrokerHarness,
} from '../../../services/broker/test/support/broker-harness.js';
import { useSmallWorkspaces } from '../../../services/broker/test/support/small-workspaces.js';
import {
  openPgliteTestDatabase,
  openPostgresTestDatabase,
  postgresAvailable,
  type TestDatabase,
} from '../../../services/broker/test/support/test-database.js';
import { LocalProvider } from '../../../services/broker/src/providers/local-provider.js';
import type { SandboxSpec } from '../../../services/broker/src/providers/provider.js';

export interface RealBroker {
  readonly harness: BrokerHarness<LocalProvider>;
  readonly apiKey: string;
  /** A token for the sandbox signed with its own key, as the broker would mint it, but short. */
  mintShortToken(
    sandboxId: string,
    sessionId: string,
    scopes: string[],
    ttlSeconds: number,
  ): { token: string; expiresAt: Date };
  close(): Promise<void>;
}

export async function startRealBroker(): Promise<RealBroker> {
  const dataDir = realpathSync(mkdtempSync(path.join(tmpdir(), 'sbx-client-')));
  const specs = new Map<string, SandboxSpec>();
  const local = await LocalProvider.open({ dataDir, logger: captureLogger([]), isolation: 'auto' });
  // The real provider; `create` is observed only to learn each sandbox's key.
  const provider = new Proxy(local, {
    get(target, property) {
      if (property === 'create') {
        return (spec: SandboxSpec) => {
          specs.set(spec.sandboxId, spec);
          return target.create(spec);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  let database: TestDatabase | undefined;
  try {
    // Postgres when the machine has it (faster to open); embedded PGlite otherwise (CI requires Postgres).
    database = postgresAvailable ? await openPostgresTestDatabase() : await openPgliteTestDatabase();
    const harness = await startBrokerHarness({ database, provider, logLevel: 'warn' });
    // Not 10 GiB each: the host's free disk then admits only a few sandboxes (small-workspaces.ts).
    await useSmallWorkspaces(harness.repositories, harness.tenantId);
    const apiKey = await harness.apiKey({ scopes: ALL_CALLER_SCOPES });
    const db = database;
    return {
      harness,
      apiKey,
      mintShortToken(sandboxId, sessionId, scopes, ttlSeconds) {
        const spec = specs.get(sandboxId);
        if (spec === undefined) throw new Error(`no spec recorded for ${sandboxId}`);
        const minted = mintCapabilityToken({
          key: spec.signingKey,
          issuer: spec.tokenIssuer,
          subject: 'user_test',
          sandboxId,
          sessionId,
          scopes,
          ttlSeconds,
        });
        return { token: minted.token, expiresAt: minted.expiresAt };
      },
      async close() {
        await harness.close();
        await local.close();
        await db.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await local.close();
    await database?.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
