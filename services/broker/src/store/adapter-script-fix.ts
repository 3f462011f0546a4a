// How the schema engine runs a migration script through a driver adapter.
import type { SqlDriverAdapter } from '@prisma/driver-adapter-utils';

interface ScriptRunner {
  executeScript(script: string): Promise<void>;
  /** The adapter's own conversion to the DriverAdapterError the engine understands. */
  onError(err: unknown): never;
}

interface PgAdapterShape extends ScriptRunner {
  underlyingDriver(): { query(sql: string): Promise<unknown> };
}

interface PgliteAdapterShape extends ScriptRunner {
  readonly client: { exec(sql: string): Promise<unknown> };
}

function isPgAdapter(adapter: object): adapter is PgAdapterShape {
  return (
    'underlyingDriver' in adapter && typeof adapter.underlyingDriver === 'function' && 'onError' in adapter
  );
}

function isPgliteAdapter(adapter: object): adapter is PgliteAdapterShape {
  const client = 'client' in adapter ? adapter.client : undefined;
  return typeof client === 'object' && client !== null && 'exec' in client && 'onError' in adapter;
}

/**
 * Makes `executeScript` (how the engine runs a migration) send the whole
 * script as one simple-protocol query, as the native engine does, so Postgres
 * runs it as one implicit transaction and a failing migration leaves nothing
 * half-applied. The adapters get this wrong in two ways:
 *  - @prisma/adapter-pg splits the script on every `;` (comments and string
 *    literals included) and sends the pieces one by one, possibly on different
 *    pooled connections;
 *  - pglite-prisma-adapter 0.7.2 does not await `exec`, so the engine records a
 *    migration as finished before it ran and never hears that it failed.
 */
export function fixExecuteScript(adapter: SqlDriverAdapter): SqlDriverAdapter {
  if (adapter.adapterName === '@prisma/adapter-pg' && isPgAdapter(adapter)) {
    adapter.executeScript = async (script: string) => {
      try {
        await adapter.underlyingDriver().query(script);
      } catch (err) {
        adapter.onError(err);
      }
    };
  } else if (adapter.adapterName === 'pglite-prisma-adapter' && isPgliteAdapter(adapter)) {
    adapter.executeScript = async (script: string) => {
      try {
        await adapter.client.exec(script);
      } catch (err) {
        adapter.onError(err);
      }
    };
  }
  return adapter;
}
