import pg from 'pg';
import type { Config } from '../config/config.js';
import { isDatabaseUnavailable } from './db-errors.js';
import type { Logger } from '../telemetry/logger.js';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'>;

/** Marks an SQL string for editor highlighting; returns it unchanged. */
export const sql = (strings: TemplateStringsArray, ...values: never[]): string =>
  String.raw({ raw: strings }, ...values);

/** Idle connections failing within this long of the first are one event (a restart): one line. */
const IDLE_ERROR_BURST_MS = 10_000;

export function createPool(
  config: Pick<
    Config,
    | 'DATABASE_URL'
    | 'DATABASE_POOL_MAX'
    | 'DATABASE_STATEMENT_TIMEOUT_MS'
    | 'DATABASE_CONNECT_TIMEOUT_MS'
    | 'DATABASE_QUERY_TIMEOUT_MS'
  >,
  logger: Logger,
  applicationName = 'payments-service',
): Pool {
  const pool = new pg.Pool({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_MAX,
    application_name: applicationName,
    /** Server-side: Postgres cancels a statement that runs this long (a bug, a lock pile-up). */
    statement_timeout: config.DATABASE_STATEMENT_TIMEOUT_MS,
    /**
     * Client-side: a Postgres that does not answer at all (frozen, partitioned) cannot cancel
     * anything, so the client gives up on the query after this long ("Query read timeout") and
     * the pool discards the connection. The outcome of a write is then unknown: the caller
     * answers 503 and the client's retry with the same key finds the committed record, if any.
     */
    query_timeout: config.DATABASE_QUERY_TIMEOUT_MS,
    /**
     * Bounds a checkout: opening a connection, and waiting for a free one when all are busy
     * (e.g. all stuck on a frozen Postgres), so callers answer 503 instead of queueing.
     */
    connectionTimeoutMillis: config.DATABASE_CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection (Postgres restart) must not crash the process. A
  // restart drops every idle connection at once: one warning per burst, the rest at debug.
  let burstStartedAt = Number.NEGATIVE_INFINITY;
  pool.on('error', (error) => {
    const at = Date.now();
    if (at - burstStartedAt < IDLE_ERROR_BURST_MS) {
      logger.debug({ err: error }, 'idle postgres client failed; it will be replaced');
      return;
    }
    burstStartedAt = at;
    logger.warn(
      { err: error, pool_connections: pool.totalCount },
      'idle postgres connections failed; they will be replaced',
    );
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
    if (isDatabaseUnavailable(error)) {
      // Lost or unanswered (query timeout): a ROLLBACK would wait just as long. Closing the
      // connection rolls the transaction back on the server.
      broken = true;
      throw error;
    }
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
