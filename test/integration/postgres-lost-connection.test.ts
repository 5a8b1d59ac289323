import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config.js';
import { createPool, withTransaction, type Pool } from '../../src/platform/db.js';
import { createLogger } from '../../src/platform/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

let db: TestDatabase;
let pool: Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  const config = { ...loadConfig(), DATABASE_URL: db.url, LOG_LEVEL: 'silent' as const };
  pool = createPool(config, createLogger(config), 'lost-connection-test');
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

describe('a checked-out client whose connection dies (Postgres stopped mid-transaction)', () => {
  it('when its backend is terminated between two queries, then the next query fails and the process lives on', async () => {
    const client = await pool.connect();
    const ended = new Promise<void>((resolve) => client.once('end', resolve));
    await client.query('BEGIN');
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // What "pg_ctl stop -m fast" does to every backend. Without a listener on the checked-out
    // client, its 'error' event is unhandled: vitest fails the file with an uncaught exception.
    await db.pool.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
    await ended;

    await expect(client.query('SELECT 1')).rejects.toThrow();
    client.release(true);
    await expect(withTransaction(pool, (c) => c.query('SELECT 1 AS one'))).resolves.toMatchObject({
      rows: [{ one: 1 }],
    });
  });
});
