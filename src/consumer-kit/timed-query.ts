import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { withTimeout } from './with-timeout.js';

/**
 * One query bounded on both sides: `query_timeout` (node-postgres gives up waiting after it and
 * the caller destroys the client) on top of the transaction's `SET LOCAL statement_timeout`.
 */
export function timedQuery<R extends QueryResultRow = QueryResultRow>(
  client: PoolClient,
  timeoutMs: number,
  text: string,
  values: unknown[] = [],
): Promise<QueryResult<R>> {
  // query_timeout is read per query by node-postgres but typed only on the client config.
  const query: QueryConfig & { query_timeout: number } = {
    text,
    values,
    query_timeout: timeoutMs + CLIENT_SLACK_MS,
  };
  return client.query<R>(query);
}

/** The client waits this much longer than the server's statement_timeout, so the server's error wins. */
const CLIENT_SLACK_MS = 1_000;

/** BEGIN, with every statement and lock wait of the transaction bounded by `timeoutMs`. */
export async function beginBounded(client: PoolClient, timeoutMs: number): Promise<void> {
  const ms = Math.max(1, Math.trunc(timeoutMs));
  await timedQuery(client, timeoutMs, 'BEGIN');
  await timedQuery(client, timeoutMs, `SET LOCAL statement_timeout = ${ms}`);
  await timedQuery(client, timeoutMs, `SET LOCAL lock_timeout = ${ms}`);
  await timedQuery(
    client,
    timeoutMs,
    `SET LOCAL idle_in_transaction_session_timeout = ${ms + CLIENT_SLACK_MS}`,
  );
}

/**
 * `work` in one bounded transaction on a client of `pool` (connecting bounded too), committed
 * when it resolves. When anything throws, the client is destroyed (rolling back whatever was
 * begun) and the error rethrown.
 */
export async function inBoundedTransaction<T>(
  pool: Pool,
  timeoutMs: number,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await withTimeout(pool.connect(), timeoutMs, 'connecting to Postgres', (late) => {
    late.release();
  });
  try {
    await beginBounded(client, timeoutMs);
    const result = await work(client);
    await timedQuery(client, timeoutMs, 'COMMIT');
    client.release();
    return result;
  } catch (error) {
    client.release(error instanceof Error ? error : true);
    throw error;
  }
}
