import type { Redaction } from '../idempotency/redact-stored-responses.js';
import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import type { KeyRing } from '../platform/secrets/key-ring.js';
import {
  openWebhookSecret,
  sealWebhookSecret,
  storedSecretOf,
  type StoredSecretColumns,
} from './webhook-secret.js';

/**
 * `npm run secrets:reencrypt`'s statements (DESIGN 113): every stored webhook secret sealed under
 * the ring's newest key, clear ones included (then cleared), and the keyed-create answers the
 * previous release stored with a clear secret redacted. Batched, one short transaction each;
 * running it again finds nothing to do.
 */

interface SecretRow extends StoredSecretColumns {
  endpoint_id: string;
  /** created_at as Postgres prints it: exact to the microsecond, unlike a JS Date. */
  at: string;
}

/**
 * Seals every secret in clear or under an older key with the newest key, `batch` rows per
 * transaction (rows locked, walked in key order so each is visited once). Returns how many rows
 * changed. A secret whose key is not in the ring stops the run, naming the key.
 */
export async function reencryptSecrets(pool: Pool, ring: KeyRing, batch: number): Promise<number> {
  let after: [string, string] = ['00000000-0000-0000-0000-000000000000', '-infinity'];
  let changed = 0;
  for (;;) {
    const rows = await withTransaction(pool, async (client) => {
      const { rows: found } = await client.query<SecretRow>(
        `SELECT endpoint_id, created_at::text AS at, secret, secret_ciphertext, secret_key_id
           FROM webhook_endpoint_secrets
          WHERE (endpoint_id, created_at) > ($1::uuid, $2::timestamptz)
            AND (secret IS NOT NULL OR secret_key_id IS DISTINCT FROM $3)
          ORDER BY endpoint_id, created_at LIMIT $4 FOR UPDATE`,
        [after[0], after[1], ring.currentKeyId, batch],
      );
      for (const row of found) {
        const secret = openWebhookSecret(ring, row.endpoint_id, storedSecretOf(row));
        const sealed = sealWebhookSecret(ring, row.endpoint_id, secret);
        await client.query(
          `UPDATE webhook_endpoint_secrets
              SET secret = NULL, secret_ciphertext = $3, secret_key_id = $4
            WHERE endpoint_id = $1 AND created_at = $2::timestamptz`,
          [row.endpoint_id, row.at, sealed.ciphertext, sealed.keyId],
        );
      }
      return found;
    });
    changed += rows.length;
    const last = rows.at(-1);
    if (last === undefined || rows.length < batch) return changed;
    after = [last.endpoint_id, last.at];
  }
}

/**
 * The keyed-create answers stored by the release before DESIGN 114, their secret in clear:
 * `"secret":"whsec_..."` becomes `"secret":null`, as this release stores them.
 */
export const CLEAR_SECRET_IN_ANSWER: Redaction = {
  like: '%"secret":"whsec\\_%',
  pattern: '"secret":"whsec_[^"]*"',
  replacement: '"secret":null',
};

/** How many webhook secrets are stored in clear (the webhooks role warns at start while any are). */
export async function countClearSecrets(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM webhook_endpoint_secrets WHERE secret IS NOT NULL',
  );
  return rows[0]?.count ?? 0;
}
