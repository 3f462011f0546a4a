/**
 * The floor of `get`, run as its own process like the broker: a bare Express 5 app whose one
 * route does the durable work a `get` must do, and nothing else — one indexed read of the
 * scope's live sandbox with the actor's binding (the broker's `findLiveScope`, on the
 * broker's own tables and unique index) and one committed insert of the rows a `get`
 * records (a `token_issuances` row and the `token.issue` and `session.negotiate` audit
 * events), through a `pg` Pool of the broker's size. No authentication, rate limit, policy,
 * token signing or group commit: each request commits its own rows. Prints `{"port":n}`
 * once listening.
 *
 * Express and pg are the broker's own copies (bench/ does not depend on them), loaded
 * from services/broker so both run the same versions.
 */
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type Express from '../../services/broker/node_modules/@types/express/index.js';
import type * as Pg from '../../services/broker/node_modules/@types/pg/index.js';

const brokerRequire = createRequire(new URL('../../services/broker/package.json', import.meta.url));
const express = brokerRequire('express') as typeof Express;
const { Pool } = brokerRequire('pg') as typeof Pg;

const databaseUrl = process.env['FLOOR_DATABASE_URL'];
if (databaseUrl === undefined) throw new Error('FLOOR_DATABASE_URL is required');
// The broker's Prisma adapter builds a pg Pool of DATABASE_POOL_SIZE, 10 when unset.
const pool = new Pool({ connectionString: databaseUrl, max: Number(process.env['FLOOR_POOL_MAX'] ?? 10) });

/** The scope's live sandbox and the actor's live binding on it (unique index `sandbox_one_live_per_scope`). */
const READ_SCOPE = `
SELECT s.id, s.state, s.http_base_url, s.ws_base_url, s.signing_key_cipher, b.id AS binding_id, b.capabilities
FROM sandboxes s
LEFT JOIN session_bindings b
  ON b.sandbox_id = s.id AND b.actor_type = $5 AND b.actor_id = $6 AND b.live = true
WHERE s.tenant_id = $1 AND s.owner_id = $2 AND s.scope_type = $3 AND s.scope_id = $4 AND s.live = true
LIMIT 1`;

/** The rows a `get` records, in one statement and so one commit. */
const RECORD_ISSUE = `
WITH issued AS (
  INSERT INTO token_issuances (jti, sub, aud, scopes, session_id, thread_id, request_id, issued_at, expires_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, now(), now() + interval '900 seconds')
)
INSERT INTO audit_events
  (request_id, action, outcome, tenant_id, caller_id, caller_type, actor_type, actor_id,
   scope_type, scope_id, session_id, sandbox_id, jti, scopes, detail)
VALUES
  ($7, 'token.issue', 'ok', $8, $9, 'service', $10, $2, 'thread', $6, $5, $3, $1, $4, NULL),
  ($7, 'session.negotiate', 'ok', $8, $9, 'service', $10, $2, 'thread', $6, $5, $3, $1, $4,
   '{"mode":"get","mvp":true}'::jsonb)`;

interface FloorRequest {
  readonly tenant_id: string;
  readonly owner_id: string;
  readonly thread_id: string;
  readonly actor_type: string;
  readonly actor_id: string;
}

interface ScopeRow {
  readonly id: string;
  readonly state: string;
  readonly binding_id: string | null;
  readonly capabilities: string[] | null;
}

const app = express();
app.disable('x-powered-by');
app.use(express.json({ limit: '256kb' }));
app.post('/v1/floor', async (req, res) => {
  const body = req.body as FloorRequest;
  const { rows } = await pool.query<ScopeRow>(READ_SCOPE, [
    body.tenant_id,
    body.owner_id,
    'thread',
    body.thread_id,
    body.actor_type,
    body.actor_id,
  ]);
  const row = rows[0];
  if (row?.binding_id === undefined || row.binding_id === null) {
    res.status(404).json({ error: 'no live binding' });
    return;
  }
  const jti = randomUUID();
  await pool.query(RECORD_ISSUE, [
    jti,
    body.actor_id,
    row.id,
    row.capabilities ?? [],
    row.binding_id,
    body.thread_id,
    randomUUID(),
    body.tenant_id,
    body.owner_id,
    body.actor_type,
  ]);
  res.json({ session_id: row.binding_id, sandbox: { id: row.id, state: row.state }, jti });
});

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close();
  void pool.end().then(() => process.exit(0));
});
