import { v7 as uuidv7 } from 'uuid';
import type { Queryable } from '../platform/database/db.js';
import { displayParts, generateApiKey, hashApiKey } from './api-key.js';
import type { Scope } from './api-key-scopes.js';

/** A key as it may be listed: never the secret, never its hash. */
export interface ApiKeyInfo {
  id: string;
  merchantId: string;
  prefix: string;
  /** null for keys migrated from the single-key design, whose plain text was never stored. */
  lastFour: string | null;
  label: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** null: a secret key ("sk_"), every scope; else a restricted key ("rk_") with these. */
  scopes: readonly string[] | null;
}

interface ApiKeyRow {
  id: string;
  merchant_id: string;
  prefix: string;
  last_four: string | null;
  label: string | null;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  scopes: string[] | null;
}

const COLUMNS =
  'id, merchant_id, prefix, last_four, label, created_at, expires_at, revoked_at, scopes';

function toInfo(row: ApiKeyRow): ApiKeyInfo {
  return {
    id: row.id,
    merchantId: row.merchant_id,
    prefix: row.prefix,
    lastFour: row.last_four,
    label: row.label,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    scopes: row.scopes,
  };
}

/**
 * Creates a live key for `merchantId`; the plain key is returned once and never stored. With
 * `scopes` (at least one) it is a restricted key ("rk_") that may do only those; without, a
 * secret key ("sk_") that may do everything.
 */
export async function createApiKey(
  db: Queryable,
  merchantId: string,
  options: { label?: string; expiresAt?: Date; scopes?: readonly Scope[] } = {},
): Promise<ApiKeyInfo & { apiKey: string }> {
  const scopes = options.scopes ?? null;
  if (scopes !== null && scopes.length === 0) throw new Error('a restricted key needs a scope');
  const apiKey = generateApiKey(scopes === null ? 'secret' : 'restricted');
  const { prefix, lastFour } = displayParts(apiKey);
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, merchant_id, key_hash, prefix, last_four, label, expires_at, scopes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [
      uuidv7(),
      merchantId,
      hashApiKey(apiKey),
      prefix,
      lastFour,
      options.label ?? null,
      options.expiresAt ?? null,
      scopes === null ? null : [...scopes],
    ],
  );
  const row = rows[0];
  if (!row) throw new Error('INSERT ... RETURNING returned no row');
  return { ...toInfo(row), apiKey };
}

/** Every key of a merchant, oldest first, revoked and expired ones included. */
export async function listApiKeys(db: Queryable, merchantId: string): Promise<ApiKeyInfo[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys WHERE merchant_id = $1 ORDER BY created_at, id`,
    [merchantId],
  );
  return rows.map(toInfo);
}

/**
 * Revokes a key (idempotent: a second revocation keeps the first time). Returns null for an
 * unknown id. Replicas that cached the key stop accepting it within AUTH_CACHE_TTL_MS.
 */
export async function revokeApiKey(db: Queryable, keyId: string): Promise<ApiKeyInfo | null> {
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
     RETURNING ${COLUMNS}`,
    [keyId],
  );
  const row = rows[0];
  return row ? toInfo(row) : null;
}
