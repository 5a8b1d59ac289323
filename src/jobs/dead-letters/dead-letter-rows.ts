import type { Queryable } from '../../platform/database/db.js';

/** A dead letter as stored in `dead_letters` (dead-letter-store), with its event id. */
export interface StoredLetterRow {
  eventId: string;
  key: string;
  value: Buffer;
  headers: Record<string, string>;
}

/**
 * The stored dead letters `dlq:replay` may put back (DESIGN 111): the latest letter of every job
 * that is still dead, and the letters of refused records (no job) that carry an event id. A
 * letter of a job that is no longer dead (replayed and settled, or pending again) has nothing
 * left to replay. Unpublished letters count too: replaying does not need the topic's copy.
 * Oldest first.
 */
export async function readReplayableDeadLetters(db: Queryable): Promise<StoredLetterRow[]> {
  const { rows } = await db.query<{
    event_id: string;
    message_key: string;
    message_value: Buffer;
    headers: string;
  }>({
    name: 'dead-letters.replayable',
    text: `SELECT d.event_id, d.message_key, d.message_value, d.headers
             FROM dead_letters d
            WHERE d.event_id IS NOT NULL
              AND (d.job_kind IS NULL
                   OR d.id = (SELECT max(o.id) FROM dead_letters o
                               WHERE o.job_kind = d.job_kind AND o.job_id = d.job_id)
                      AND (EXISTS (SELECT 1 FROM settlement_jobs j
                                    WHERE d.job_kind = 'settlement' AND j.payment_id = d.job_id
                                      AND j.state = 'dead')
                           OR EXISTS (SELECT 1 FROM refund_jobs j
                                       WHERE d.job_kind = 'refund' AND j.refund_id = d.job_id
                                         AND j.state = 'dead')
                           OR EXISTS (SELECT 1 FROM hold_jobs j
                                       WHERE d.job_kind = 'hold' AND j.payment_id = d.job_id
                                         AND j.state = 'dead')))
            ORDER BY d.id`,
  });
  return rows.map((row) => ({
    eventId: row.event_id,
    key: row.message_key,
    value: row.message_value,
    headers: JSON.parse(row.headers) as Record<string, string>,
  }));
}
