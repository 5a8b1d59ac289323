import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config/config.js';
import { createPool, withTransaction, type Pool } from '../../src/platform/database/db.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { capturedLogger } from '../support/captured-logger.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';

let db: TestDatabase;
let pool: Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  const config = { ...loadConfig(), DATABASE_URL: db.roleUrl('api'), LOG_LEVEL: 'silent' as const };
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
    // Terminated as the same login: only a member of a backend's role may terminate it.
    await db.login('api').query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
    await ended;

    await expect(client.query('SELECT 1')).rejects.toThrow();
    client.release(true);
    await expect(withTransaction(pool, (c) => c.query('SELECT 1 AS one'))).resolves.toMatchObject({
      rows: [{ one: 1 }],
    });
  });
});

describe('idle connections dropped together (Postgres restarted)', () => {
  it('when every idle connection of the pool is terminated at once, then one warning for them all, and the pool serves again', async () => {
    const { lines, logger } = capturedLogger();
    const config = { ...loadConfig(), DATABASE_URL: db.roleUrl('api'), DATABASE_POOL_MAX: 6 };
    const idle = createPool(config, logger, 'idle-burst-test');
    try {
      // Six connections, all back in the pool and idle.
      const clients = await Promise.all(Array.from({ length: 6 }, () => idle.connect()));
      for (const client of clients) client.release();
      expect(idle.idleCount).toBe(6);
      await db.login('api').query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE application_name = 'idle-burst-test'`,
      );
      await waitFor(() => idle.totalCount === 0);

      const about = lines.filter((line) => String(line.msg).includes('idle postgres'));
      expect(about.filter((line) => line.level === 40)).toHaveLength(1);
      expect(about.filter((line) => line.level === 20)).toHaveLength(5);
      await expect(idle.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      await idle.end();
    }
  });
});

async function waitFor(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
