/**
 * The floor's server side, run as its own process like the broker: a bare Express 5 app
 * with one route doing one indexed Postgres read (`bench.floor` by primary key) through a
 * `pg` Pool of the broker's size. Prints `{"port":n}` once listening.
 *
 * Express and pg are the broker's own copies (bench/ does not depend on them), loaded
 * from services/broker so both run the same versions.
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type Express from '../../services/broker/node_modules/@types/express/index.js';
import type * as Pg from '../../services/broker/node_modules/@types/pg/index.js';

const brokerRequire = createRequire(new URL('../../services/broker/package.json', import.meta.url));
const express = brokerRequire('express') as typeof Express;
const { Pool } = brokerRequire('pg') as typeof Pg;

const databaseUrl = process.env['FLOOR_DATABASE_URL'];
if (databaseUrl === undefined) throw new Error('FLOOR_DATABASE_URL is required');
// The broker's Prisma adapter builds a pg Pool with pg's default size (10).
const pool = new Pool({ connectionString: databaseUrl, max: Number(process.env['FLOOR_POOL_MAX'] ?? 10) });

const app = express();
app.disable('x-powered-by');
app.use(express.json({ limit: '256kb' }));
app.post('/v1/floor', async (req, res) => {
  const { id } = req.body as { id?: unknown };
  const { rows } = await pool.query<{ id: string; thread_id: string }>(
    'SELECT id, thread_id FROM bench.floor WHERE id = $1',
    [id],
  );
  const row = rows[0];
  if (row === undefined) res.status(404).json({ error: 'not found' });
  else res.json(row);
});

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close();
  void pool.end().then(() => process.exit(0));
});
