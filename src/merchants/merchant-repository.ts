import { v7 as uuidv7 } from 'uuid';
import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import { hashApiKey } from './api-key.js';
import { scopeMask, type ScopeMask } from './api-key-scopes.js';
import { createApiKey } from './api-key-repository.js';

/** A merchant's rate-limit tier: a token bucket of `ratePerSecond` sustained, `burst` at once. */
export interface Tier {
  name: string;
  ratePerSecond: number;
  burst: number;
}

export interface Merchant {
  id: string;
  name: string;
  tier: Tier;
}

/** A merchant as one of its keys presents it: with what that key may do (api-key-scopes.ts). */
export interface KeyHolder extends Merchant {
  scopes: ScopeMask;
}

/** The tier every new merchant gets unless told otherwise (seeded by migration 0008). */
export const DEFAULT_TIER = 'default';

/**
 * Creates a merchant and its first API key in one transaction (a failure leaves neither); the
 * plain key is returned once and never stored.
 */
export async function createMerchant(
  pool: Pool,
  name: string,
  tier: string = DEFAULT_TIER,
): Promise<NewMerchant> {
  return withTransaction(pool, async (client) => {
    const id = uuidv7();
    const { rows } = await client.query<{ created_at: Date }>(
      'INSERT INTO merchants (id, name, tier) VALUES ($1, $2, $3) RETURNING created_at',
      [id, name, tier],
    );
    const key = await createApiKey(client, id, { label: 'initial' });
    return {
      id,
      name,
      tier,
      apiKey: key.apiKey,
      apiKeyId: key.id,
      createdAt: rows[0]?.created_at ?? new Date(),
    };
  });
}

export interface NewMerchant {
  id: string;
  name: string;
  tier: string;
  apiKey: string;
  apiKeyId: string;
  createdAt: Date;
}

/** Moves a merchant to another tier; false when the merchant does not exist. */
export async function setMerchantTier(
  db: Queryable,
  merchantId: string,
  tier: string,
): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE merchants SET tier = $2 WHERE id = $1', [
    merchantId,
    tier,
  ]);
  return rowCount === 1;
}

/**
 * The merchant of a live key (not revoked, not expired) with its tier and the key's scopes, and
 * when the key expires so a cache never keeps it longer.
 */
export async function findMerchantByApiKey(
  db: Queryable,
  apiKey: string,
): Promise<(KeyHolder & { keyExpiresAt: Date | null }) | null> {
  const { rows } = await db.query<{
    id: string;
    name: string;
    tier: string;
    rate_per_second: number;
    burst: number;
    expires_at: Date | null;
    scopes: string[] | null;
  }>({
    name: 'merchants.find-by-key',
    text: `SELECT m.id, m.name, t.name AS tier, t.rate_per_second, t.burst, k.expires_at, k.scopes
           FROM api_keys k
           JOIN merchants m ON m.id = k.merchant_id
           JOIN rate_limit_tiers t ON t.name = m.tier
           WHERE k.key_hash = $1 AND k.revoked_at IS NULL
             AND (k.expires_at IS NULL OR k.expires_at > now())`,
    values: [hashApiKey(apiKey)],
  });
  const row = rows[0];
  if (!row) return null;
  return {
    id: row.id,
    name: row.name,
    tier: { name: row.tier, ratePerSecond: row.rate_per_second, burst: row.burst },
    scopes: scopeMask(row.scopes),
    keyExpiresAt: row.expires_at,
  };
}
