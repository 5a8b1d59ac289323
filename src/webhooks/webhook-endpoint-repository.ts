import { keyRecordExists, keyRecordInsertCte } from '../idempotency/idempotency-repository.js';
import {
  withTransaction,
  type Pool,
  type PoolClient,
  type Queryable,
} from '../platform/database/db.js';
import type { Sealed } from '../platform/secrets/key-ring.js';
import { ENDPOINT_COLUMNS, type EndpointRow } from './webhook-resource.js';
import { storedSecretOf, type StoredSecret, type StoredSecretColumns } from './webhook-secret.js';

/** Every statement on webhook_endpoints and webhook_endpoint_secrets the API runs. */

export interface NewEndpoint {
  id: string;
  merchantId: string;
  url: string;
  description: string | null;
  enabledEvents: string[];
  disabled: boolean;
  /** The signing secret, sealed under the key ring: never written in clear. */
  secret: Sealed;
  createdAt: Date;
}

/** The key record written with the endpoint when the POST carried an Idempotency-Key. */
export interface EndpointKeyRecord {
  key: string;
  fingerprint: Buffer;
  body: string;
  ttlSeconds: number;
}

const endpointAndSecretCtes = `endpoint AS (
    INSERT INTO webhook_endpoints (id, merchant_id, url, description, enabled_events, disabled_at,
                                   disabled_reason, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5::text[], CASE WHEN $6::boolean THEN $7::timestamptz END,
            CASE WHEN $6::boolean THEN 'merchant' END, $7::timestamptz, $7::timestamptz)
    RETURNING id
  ), secret AS (
    INSERT INTO webhook_endpoint_secrets (endpoint_id, secret_ciphertext, secret_key_id, created_at)
    SELECT id, $8::bytea, $9, $7::timestamptz FROM endpoint
    RETURNING endpoint_id
  )`;

/** The endpoint and its first secret, in one statement. */
const INSERT_ENDPOINT_SQL = `WITH ${endpointAndSecretCtes} SELECT endpoint.id FROM endpoint, secret`;

/** The same with the POST's key record (idempotency's part), so all three or none are written. */
const INSERT_ENDPOINT_WITH_KEY_SQL = `WITH ${endpointAndSecretCtes}, ${keyRecordInsertCte(
  'record',
  {
    merchantId: '$2',
    key: '$10',
    fingerprint: '$11',
    status: '201',
    body: '$12::text',
    createdAt: '$7::timestamptz',
    ttlSeconds: '$13',
  },
  { ifKeyFree: false },
)}
  SELECT record.expires_at FROM endpoint, secret, record`;

/**
 * The merchant has `maxEndpoints` endpoints already, and `key` (if any) has no record to replay:
 * a create would be refused, so it is refused before its URL is resolved (DESIGN 118).
 * insertEndpoint counts again under the merchant's lock; this read only spares the DNS query.
 */
export async function endpointLimitReached(
  pool: Pool,
  merchantId: string,
  maxEndpoints: number,
  key: string | undefined,
): Promise<boolean> {
  const { rows } = await pool.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM webhook_endpoints WHERE merchant_id = $1',
    [merchantId],
  );
  if ((rows[0]?.count ?? 0) < maxEndpoints) return false;
  return key === undefined || !(await keyRecordExists(pool, merchantId, key));
}

export type InsertEndpointResult =
  { kind: 'created'; expiresAt: Date | null } | { kind: 'key_taken' } | { kind: 'limit_reached' };

/**
 * Inserts the endpoint, its secret and (with `record`) its key record in one transaction that
 * holds the merchant's advisory lock: two concurrent creates of one merchant count the
 * endpoints one after the other, so the limit holds. `key_taken`: the key already has a record
 * (the caller replays it), and nothing is written.
 */
export async function insertEndpoint(
  pool: Pool,
  endpoint: NewEndpoint,
  maxEndpoints: number,
  record?: EndpointKeyRecord,
): Promise<InsertEndpointResult> {
  return withTransaction(pool, async (client) => {
    await lockMerchantEndpoints(client, endpoint.merchantId);
    if (record && (await keyRecordExists(client, endpoint.merchantId, record.key))) {
      return { kind: 'key_taken' };
    }
    const { rows: counted } = await client.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM webhook_endpoints WHERE merchant_id = $1',
      [endpoint.merchantId],
    );
    if ((counted[0]?.count ?? 0) >= maxEndpoints) return { kind: 'limit_reached' };
    const values: unknown[] = [
      endpoint.id,
      endpoint.merchantId,
      endpoint.url,
      endpoint.description,
      endpoint.enabledEvents,
      endpoint.disabled,
      endpoint.createdAt,
      endpoint.secret.ciphertext,
      endpoint.secret.keyId,
    ];
    if (!record) {
      await client.query(INSERT_ENDPOINT_SQL, values);
      return { kind: 'created', expiresAt: null };
    }
    const { rows } = await client.query<{ expires_at: Date }>(INSERT_ENDPOINT_WITH_KEY_SQL, [
      ...values,
      record.key,
      record.fingerprint,
      record.body,
      record.ttlSeconds,
    ]);
    return { kind: 'created', expiresAt: rows[0]?.expires_at ?? null };
  });
}

/** Serializes the endpoint creates of one merchant until the transaction ends. */
async function lockMerchantEndpoints(client: PoolClient, merchantId: string): Promise<void> {
  await client.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('webhook_endpoints:' || $1::text, 0))`,
    [merchantId],
  );
}

/** A merchant's endpoint, or null: another merchant's endpoint is indistinguishable from none. */
export async function findEndpoint(
  db: Queryable,
  merchantId: string,
  endpointId: string,
): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND merchant_id = $2`,
    [endpointId, merchantId],
  );
  return rows[0] ?? null;
}

export type EndpointPage =
  { kind: 'page'; rows: EndpointRow[]; hasMore: boolean } | { kind: 'unknown_cursor' };

/** Oldest first, keyset on (created_at, id); fetches limit + 1 to learn has_more. */
export async function listEndpoints(
  db: Queryable,
  merchantId: string,
  limit: number,
  startingAfter?: string,
): Promise<EndpointPage> {
  if (startingAfter !== undefined && !(await findEndpoint(db, merchantId, startingAfter))) {
    return { kind: 'unknown_cursor' };
  }
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints
      WHERE merchant_id = $1
        AND ($2::uuid IS NULL
             OR (created_at, id) > (SELECT created_at, id FROM webhook_endpoints WHERE id = $2))
      ORDER BY created_at, id LIMIT $3`,
    [merchantId, startingAfter ?? null, limit + 1],
  );
  return { kind: 'page', rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

export interface EndpointChanges {
  url?: string;
  enabledEvents?: string[];
  /** Undefined: unchanged; null: cleared. */
  description?: string | null;
  disabled?: boolean;
}

/**
 * Applies a PATCH. Disabling keeps an earlier reason (gone, failing) and time; re-enabling
 * clears the reason and failing_since. Null when the merchant has no such endpoint.
 */
export async function updateEndpoint(
  db: Queryable,
  merchantId: string,
  endpointId: string,
  changes: EndpointChanges,
): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
        url = coalesce($3, url),
        enabled_events = coalesce($4::text[], enabled_events),
        description = CASE WHEN $5::boolean THEN $6 ELSE description END,
        disabled_at = CASE WHEN $7::boolean IS TRUE THEN coalesce(disabled_at, now())
                           WHEN $7::boolean IS FALSE THEN NULL ELSE disabled_at END,
        disabled_reason = CASE WHEN $7::boolean IS TRUE THEN coalesce(disabled_reason, 'merchant')
                               WHEN $7::boolean IS FALSE THEN NULL ELSE disabled_reason END,
        failing_since = CASE WHEN $7::boolean IS FALSE THEN NULL ELSE failing_since END,
        updated_at = now()
      WHERE id = $1 AND merchant_id = $2
      RETURNING ${ENDPOINT_COLUMNS}`,
    [
      endpointId,
      merchantId,
      changes.url ?? null,
      changes.enabledEvents ?? null,
      changes.description !== undefined,
      changes.description ?? null,
      changes.disabled ?? null,
    ],
  );
  return rows[0] ?? null;
}

/** Deletes the endpoint with its secrets and deliveries (ON DELETE CASCADE); false if none. */
export async function deleteEndpoint(
  db: Queryable,
  merchantId: string,
  endpointId: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    'DELETE FROM webhook_endpoints WHERE id = $1 AND merchant_id = $2',
    [endpointId, merchantId],
  );
  return rowCount !== 0;
}

export type RotateResult =
  { kind: 'rotated'; previousExpiresAt: Date | null } | { kind: 'not_found' };

/**
 * A new current secret; the current one keeps signing for `graceSeconds` (its expires_at), and
 * secrets already expired are removed. The endpoint row's lock serializes rotations.
 */
export async function rotateSecret(
  pool: Pool,
  merchantId: string,
  endpointId: string,
  secret: Sealed,
  graceSeconds: number,
): Promise<RotateResult> {
  return withTransaction(pool, async (client) => {
    const { rowCount } = await client.query(
      `UPDATE webhook_endpoints SET updated_at = now() WHERE id = $1 AND merchant_id = $2`,
      [endpointId, merchantId],
    );
    if (rowCount === 0) return { kind: 'not_found' };
    await client.query(
      'DELETE FROM webhook_endpoint_secrets WHERE endpoint_id = $1 AND expires_at <= now()',
      [endpointId],
    );
    const { rows } = await client.query<{ expires_at: Date }>(
      `UPDATE webhook_endpoint_secrets SET expires_at = now() + make_interval(secs => $2)
        WHERE endpoint_id = $1 AND expires_at IS NULL
        RETURNING expires_at`,
      [endpointId, graceSeconds],
    );
    await client.query(
      `INSERT INTO webhook_endpoint_secrets (endpoint_id, secret_ciphertext, secret_key_id, created_at)
       VALUES ($1, $2, $3, clock_timestamp())`,
      [endpointId, secret.ciphertext, secret.keyId],
    );
    return { kind: 'rotated', previousExpiresAt: rows[0]?.expires_at ?? null };
  });
}

/**
 * The secret an endpoint was created with, while it is still the current one (not rotated, the
 * endpoint not deleted): what a replayed create shows. Null otherwise.
 */
export async function findCreatedSecret(
  db: Queryable,
  merchantId: string,
  endpointId: string,
): Promise<StoredSecret | null> {
  const { rows } = await db.query<StoredSecretColumns>(
    `SELECT s.secret, s.secret_ciphertext, s.secret_key_id
       FROM webhook_endpoint_secrets s JOIN webhook_endpoints e ON e.id = s.endpoint_id
      WHERE e.id = $1 AND e.merchant_id = $2 AND s.created_at = e.created_at
        AND s.expires_at IS NULL`,
    [endpointId, merchantId],
  );
  const [row] = rows;
  return row === undefined ? null : storedSecretOf(row);
}
