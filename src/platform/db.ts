import pg from 'pg';
import type { Config } from './config.js';
import type { Logger } from './logger.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'>;

/** Marks an SQL string for editor highlighting; returns it unchanged. */
export const sql = (strings: TemplateStringsArray, ...values: never[]): string =>
  String.raw({ raw: strings }, ...values);

export function createPool(
  config: Pick<Config, 'DATABASE_URL' | 'DATABASE_POOL_MAX' | 'DATABASE_STATEMENT_TIMEOUT_MS'>,
  logger: Logger,
  applicationName = 'payments-service',
): Pool {
  const pool = new pg.Pool({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_MAX,
    application_name: applicationName,
    statement_timeout: config.DATABASE_STATEMENT_TIMEOUT_MS,
    /** Fail fast when Postgres is down so callers can answer 503 instead of queueing forever. */
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection (Postgres restart) must not crash the process.
  pool.on('error', (error) => {
    logger.warn({ err: error }, 'idle postgres client failed; it will be replaced');
  });
  // The pool listens only to idle clients: a checked-out client whose connection dies between
  // two queries (Postgres stopped mid-transaction) emits 'error' with no listener, which kills
  // the process. Its caller learns of it from the next query, which fails.
  pool.on('connect', (client) => {
    client.on('error', (error) => {
      logger.debug({ err: error }, 'postgres connection lost');
    });
  });
  return pool;
}

/**
 * Runs `fn` inside BEGIN/COMMIT on one checked-out client; rolls back and rethrows on any error.
 * The caller owns the transaction; repositories take the client they are given.
 */
export async function withTransaction<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch {
      // The connection itself is gone; do not hand it back to the pool.
      broken = true;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

export async function pingPostgres(pool: Queryable): Promise<void> {
  await pool.query('SELECT 1');
}
