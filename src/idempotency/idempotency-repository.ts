import type { Queryable } from '../platform/database/db.js';
import type { StoredResponse } from './stored-response.js';

/**
 * SQL expressions (placeholders, literals) for the columns of a new key record. The record
 * points at the resource it created: `paymentId` (a refund's payment too) and `refundId`; a POST
 * that creates no payment (webhook endpoints, replays) leaves both out.
 */
export interface KeyRecordSql {
  merchantId: string;
  key: string;
  fingerprint: string;
  paymentId?: string;
  refundId?: string;
  status: string;
  body: string;
  /** The record's creation time; it expires `ttlSeconds` later. */
  createdAt: string;
  ttlSeconds: string;
}

/**
 * `name AS (INSERT INTO idempotency_keys ... RETURNING payment_id, expires_at)`: the key's
 * record as a CTE of the resource's one statement, which writes the resource only with it (the
 * UNIQUE (merchant, key) constraint is the guard, I1). `ifKeyFree`: ON CONFLICT DO NOTHING, so
 * a taken key returns no row and the statement's later CTEs, reading from this one, write
 * nothing; without it a taken key fails the statement (23505 on idempotency_keys_pkey).
 * `from` (an earlier CTE or unnest of the statement, with its ORDER BY) writes one record per
 * row of it, the `row` expressions naming its columns: the batched POST's many records. A key
 * twice in `from` is written once, for its first row (DO NOTHING sees the command's own rows).
 */
export function keyRecordInsertCte(
  name: string,
  row: KeyRecordSql,
  options: { ifKeyFree: boolean; from?: string },
): string {
  const columns: [string, string | undefined][] = [
    ['merchant_id', row.merchantId],
    ['idempotency_key', row.key],
    ['fingerprint', row.fingerprint],
    ['payment_id', row.paymentId],
    ['refund_id', row.refundId],
    ['response_status', row.status],
    ['response_body', row.body],
    ['created_at', row.createdAt],
    ['expires_at', `${row.createdAt}::timestamptz + make_interval(secs => ${row.ttlSeconds})`],
  ];
  const set = columns.filter((column): column is [string, string] => column[1] !== undefined);
  const onConflict = options.ifKeyFree
    ? '\n       ON CONFLICT (merchant_id, idempotency_key) DO NOTHING'
    : '';
  const values = set.map(([, value]) => value).join(', ');
  const source =
    options.from === undefined ? `VALUES (${values})` : `SELECT ${values} FROM ${options.from}`;
  return `${name} AS (
       INSERT INTO idempotency_keys (${set.map(([column]) => column).join(', ')})
       ${source}${onConflict}
       RETURNING payment_id, expires_at
     )`;
}

interface KeyRow {
  payment_id: string | null;
  refund_id: string | null;
  fingerprint: Buffer;
  response_status: number;
  response_body: string;
  expires_at: Date;
  expired: boolean;
}

export type FoundKey = { kind: 'live'; response: StoredResponse } | { kind: 'expired' } | null;

/** The key's record as the database sees it now (expiry judged by the database clock). */
export async function findKey(db: Queryable, merchantId: string, key: string): Promise<FoundKey> {
  const { rows } = await db.query<KeyRow>({
    name: 'idempotency.find-key',
    text: `SELECT payment_id, refund_id, fingerprint, response_status, response_body, expires_at,
            expires_at <= now() AS expired
       FROM idempotency_keys WHERE merchant_id = $1 AND idempotency_key = $2`,
    values: [merchantId, key],
  });
  const row = rows[0];
  if (!row) return null;
  if (row.expired) return { kind: 'expired' };
  return {
    kind: 'live',
    response: {
      ...(row.payment_id === null ? {} : { paymentId: row.payment_id }),
      ...(row.refund_id === null ? {} : { refundId: row.refund_id }),
      fingerprint: row.fingerprint.toString('hex'),
      status: row.response_status,
      body: row.response_body,
      expiresAt: row.expires_at,
    },
  };
}

/** Whether the key has a record, live or expired (a resource's write checks it under its lock). */
export async function keyRecordExists(
  db: Queryable,
  merchantId: string,
  key: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    'SELECT 1 FROM idempotency_keys WHERE merchant_id = $1 AND idempotency_key = $2',
    [merchantId, key],
  );
  return rowCount !== 0;
}

/** Removes the key's record if it has expired, so the key can start a new payment. */
export async function deleteExpiredKey(db: Queryable, merchantId: string, key: string) {
  await db.query(
    `DELETE FROM idempotency_keys
      WHERE merchant_id = $1 AND idempotency_key = $2 AND expires_at <= now()`,
    [merchantId, key],
  );
}

/**
 * Deletes up to `batch` expired records, oldest first, skipping rows another reaper holds.
 * Payments are never touched: the record only points at its payment.
 */
export async function reapExpiredKeys(db: Queryable, batch: number): Promise<number> {
  const result = await db.query(
    `DELETE FROM idempotency_keys k
      USING (SELECT merchant_id, idempotency_key FROM idempotency_keys
              WHERE expires_at <= now() ORDER BY expires_at LIMIT $1
              FOR UPDATE SKIP LOCKED) expired
      WHERE k.merchant_id = expired.merchant_id AND k.idempotency_key = expired.idempotency_key`,
    [batch],
  );
  return result.rowCount ?? 0;
}
