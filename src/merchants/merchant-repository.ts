import { v7 as uuidv7 } from 'uuid';
import type { Queryable } from '../platform/db.js';
import { generateApiKey, hashApiKey } from './api-key.js';

export interface Merchant {
  id: string;
  name: string;
}

/** Creates a merchant; the plain API key is returned once and never stored. */
export async function createMerchant(
  db: Queryable,
  name: string,
): Promise<Merchant & { apiKey: string; createdAt: Date }> {
  const id = uuidv7();
  const apiKey = generateApiKey();
  const { rows } = await db.query<{ created_at: Date }>(
    'INSERT INTO merchants (id, name, api_key_hash) VALUES ($1, $2, $3) RETURNING created_at',
    [id, name, hashApiKey(apiKey)],
  );
  return { id, name, apiKey, createdAt: rows[0]?.created_at ?? new Date() };
}

export async function findMerchantByApiKey(
  db: Queryable,
  apiKey: string,
): Promise<Merchant | null> {
  const { rows } = await db.query<Merchant>({
    name: 'merchants.find-by-key',
    text: 'SELECT id, name FROM merchants WHERE api_key_hash = $1',
    values: [hashApiKey(apiKey)],
  });
  return rows[0] ?? null;
}
