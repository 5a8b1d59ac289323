import type { Queryable } from '../platform/db.js';
import { deleteExpiredKey, findKey } from './idempotency-repository.js';
import type { StoredResponse } from './stored-response.js';

/** Runs a database step of an idempotent request (maps "Postgres unreachable" to a 503). */
export type DatabaseGuard = <T>(fn: () => Promise<T>) => Promise<T>;

/**
 * The resource-specific write: ONE transaction that inserts the idempotency record, the
 * resource and its outbox row, or nothing. Resolves with the stored response when it wrote,
 * null when the key already has a record. May throw a domain error (a refusal), writing nothing.
 */
export type InsertOnce = () => Promise<StoredResponse | null>;

export interface WriteOnceDeps {
  db: Queryable;
  database: DatabaseGuard;
}

export interface WriteResult {
  /** True when this request wrote the resource; false when the key already had a record. */
  created: boolean;
  stored: StoredResponse;
}

/**
 * Claims the key with the resource's insert (the UNIQUE constraint is the guard); otherwise
 * returns the key's live record. An expired record is removed and the insert tried once more.
 */
export async function writeOnce(
  deps: WriteOnceDeps,
  merchantId: string,
  key: string,
  insert: InsertOnce,
): Promise<WriteResult> {
  // Twice at most: the second pass follows the removal of an expired record.
  for (let pass = 0; pass < 2; pass++) {
    const stored = await deps.database(insert);
    if (stored) return { created: true, stored };
    const existing = await deps.database(() => findKey(deps.db, merchantId, key));
    if (existing?.kind === 'live') return { created: false, stored: existing.response };
    if (existing?.kind === 'expired') {
      await deps.database(() => deleteExpiredKey(deps.db, merchantId, key));
    }
    // null: reaped between the two statements; either way the key is free again.
  }
  throw new Error(`idempotency key could not be claimed or read after retrying`);
}
