import type { Pool } from '../platform/database/db.js';

/** What to redact from stored answers: rows whose body is LIKE `like`, `pattern` (a POSIX regex) replaced. */
export interface Redaction {
  like: string;
  pattern: string;
  replacement: string;
}

/**
 * Rewrites the stored answers of creates that made no payment (`payment_id IS NULL`) whose body
 * matches: every match of `pattern` replaced, `batch` records per statement. Returns the
 * (merchant, key) of each, so the caller can drop their Redis copies (response-cache.ts).
 */
export async function redactStoredResponses(
  pool: Pool,
  redaction: Redaction,
  batch: number,
): Promise<{ merchantId: string; key: string }[]> {
  const redacted: { merchantId: string; key: string }[] = [];
  for (;;) {
    const { rows } = await pool.query<{ merchant_id: string; idempotency_key: string }>(
      `UPDATE idempotency_keys k
          SET response_body = regexp_replace(k.response_body, $2, $3, 'g')
         FROM (SELECT merchant_id, idempotency_key FROM idempotency_keys
                WHERE payment_id IS NULL AND response_body LIKE $1
                LIMIT $4 FOR UPDATE) due
        WHERE k.merchant_id = due.merchant_id AND k.idempotency_key = due.idempotency_key
        RETURNING k.merchant_id, k.idempotency_key`,
      [redaction.like, redaction.pattern, redaction.replacement, batch],
    );
    for (const row of rows)
      redacted.push({ merchantId: row.merchant_id, key: row.idempotency_key });
    if (rows.length < batch) return redacted;
  }
}
