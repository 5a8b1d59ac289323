import type { Queryable } from '../../platform/database/db.js';
import type { ProducerRecord } from '../../platform/kafka/kafka.js';

/**
 * Dead letters kept in the database until the dead-letter topic has them (migration 0021,
 * DESIGN record 49). A letter is stored in the transaction that gives up on its job (or before
 * the consumer moves past a poison record) and published afterwards by `createDeadLetterPublisher` (dead-letter-publisher.ts)
 * with a bounded producer: a broker that does not answer costs one bounded send, the row stays
 * unpublished and is sent again later. Nothing waits on Kafka holding a job, a slot or a
 * partition.
 */
export interface StoredDeadLetter {
  /** One letter per key: a second store of the same key (a redelivery, a re-claim) is a no-op. */
  dedupKey: string;
  eventId: string | null;
  topic: string;
  record: ProducerRecord;
  /** The dead job it stands for (a poison record's letter has none): kept while it is dead. */
  job?: { kind: 'settlement' | 'refund' | 'hold'; id: string };
}

/** Stores a dead letter once per dedup key; true when this call stored it. */
export async function storeDeadLetter(db: Queryable, letter: StoredDeadLetter): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'dead-letters.store',
    text: `INSERT INTO dead_letters
             (dedup_key, event_id, topic, message_key, message_value, headers, job_kind, job_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (dedup_key) DO NOTHING`,
    values: [
      letter.dedupKey,
      letter.eventId,
      letter.topic,
      letter.record.key,
      Buffer.isBuffer(letter.record.value)
        ? letter.record.value
        : Buffer.from(letter.record.value, 'utf8'),
      JSON.stringify(letter.record.headers),
      letter.job?.kind ?? null,
      letter.job?.id ?? null,
    ],
  });
  return rowCount === 1;
}

export interface ClaimedLetter {
  id: string;
  topic: string;
  record: ProducerRecord;
  /**
   * The row's previous claim ended without releasing it (its lease ran out: a crash, a lost
   * database answer after the send, a commit left in doubt): its letter may be on the topic.
   */
  unreleased: boolean;
  /**
   * The claim's lease end as the database wrote it: the marks below change the row only while it
   * is still this claim's (a process whose lease ran out, and whose rows another claimed, changes
   * nothing).
   */
  lease: string;
}

/** The rows a mark is for: each with the lease its claim wrote. */
export type LetterClaims = readonly Pick<ClaimedLetter, 'id' | 'lease'>[];

/** Unpublished letters, oldest first, leased for `leaseMs` (several settlement processes). */
export async function claimUnpublished(
  db: Queryable,
  limit: number,
  leaseMs: number,
): Promise<ClaimedLetter[]> {
  const { rows } = await db.query<{
    id: string;
    topic: string;
    message_key: string;
    message_value: Buffer;
    headers: string;
    unreleased: boolean;
    lease: string;
  }>({
    name: 'dead-letters.claim',
    text: `UPDATE dead_letters d
              SET attempts = d.attempts + 1,
                  locked_until = now() + make_interval(secs => $2::double precision / 1000)
             FROM (SELECT id, locked_until AS previous_lease FROM dead_letters
                    WHERE published_at IS NULL AND next_attempt_at <= now()
                      AND (locked_until IS NULL OR locked_until <= now())
                    ORDER BY id LIMIT $1
                    FOR UPDATE SKIP LOCKED) due
            WHERE d.id = due.id
        RETURNING d.id, d.topic, d.message_key, d.message_value, d.headers,
                  due.previous_lease IS NOT NULL AS unreleased, d.locked_until::text AS lease`,
    values: [limit, leaseMs],
  });
  return rows
    .map((row) => ({
      id: row.id,
      topic: row.topic,
      record: {
        key: row.message_key,
        value: row.message_value,
        headers: JSON.parse(row.headers) as Record<string, string>,
      },
      unreleased: row.unreleased,
      lease: row.lease,
    }))
    .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

/** The rows of `claims` still held by those claims: `c` joined on id and lease. */
const STILL_CLAIMED = `FROM unnest($1::bigint[], $2::timestamptz[]) AS c(id, lease)
            WHERE d.id = c.id AND d.locked_until = c.lease`;

function claimValues(claims: LetterClaims): [string[], string[]] {
  return [claims.map((claim) => claim.id), claims.map((claim) => claim.lease)];
}

/** Marks claimed letters published; a row another claim took since is left alone. */
export async function markPublished(db: Queryable, claims: LetterClaims): Promise<void> {
  await db.query({
    name: 'dead-letters.published',
    text: `UPDATE dead_letters d
              SET published_at = now(), locked_until = NULL, last_error = NULL
           ${STILL_CLAIMED}`,
    values: claimValues(claims),
  });
}

/** Releases claimed letters whose send failed before any commit, to be sent after `delayMs`. */
export async function markUnsent(
  db: Queryable,
  claims: LetterClaims,
  error: unknown,
  delayMs: number,
): Promise<void> {
  await db.query({
    name: 'dead-letters.unsent',
    text: `UPDATE dead_letters d
              SET locked_until = NULL, last_error = $3,
                  next_attempt_at = now() + make_interval(secs => $4::double precision / 1000)
           ${STILL_CLAIMED}`,
    values: [
      ...claimValues(claims),
      (error instanceof Error ? error.message : String(error)).slice(0, 1_000),
      delayMs,
    ],
  });
}

/**
 * A send whose commit is still in doubt (dead-letter-producer): the rows keep their lease, so no
 * other process claims them before the earlier transaction's outcome is final; the next claim
 * (after the lease) reads the topic before sending (DESIGN 49).
 */
export async function markInDoubt(
  db: Queryable,
  claims: LetterClaims,
  error: unknown,
): Promise<void> {
  await db.query({
    name: 'dead-letters.in-doubt',
    text: `UPDATE dead_letters d SET last_error = $3, next_attempt_at = d.locked_until
           ${STILL_CLAIMED}`,
    values: [
      ...claimValues(claims),
      (error instanceof Error ? error.message : String(error)).slice(0, 1_000),
    ],
  });
}

/** Rows per DELETE of the retention purge, and how many DELETEs one purge makes at most. */
const PURGE_BATCH_SIZE = 1_000;
const PURGE_MAX_BATCHES = 10;

/**
 * Deletes letters published more than `retentionSeconds` ago, a batch at a time (a bounded
 * number per call). Unpublished letters are never deleted: they are the only copy. Neither is the
 * letter of a job that is still dead, however old (DESIGN 111): `dlq:replay` reads it from here
 * once the topic's retention has dropped it. Returns how many rows went.
 */
export async function purgePublishedDeadLetters(
  db: Queryable,
  retentionSeconds: number,
): Promise<number> {
  let deleted = 0;
  for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
    const { rowCount } = await db.query({
      name: 'dead-letters.purge',
      text: `DELETE FROM dead_letters WHERE id IN (
               SELECT d.id FROM dead_letters d
                WHERE d.published_at < now() - make_interval(secs => $1::double precision)
                  AND NOT EXISTS (SELECT 1 FROM settlement_jobs j
                                   WHERE d.job_kind = 'settlement' AND j.payment_id = d.job_id
                                     AND j.state = 'dead')
                  AND NOT EXISTS (SELECT 1 FROM refund_jobs j
                                   WHERE d.job_kind = 'refund' AND j.refund_id = d.job_id
                                     AND j.state = 'dead')
                  AND NOT EXISTS (SELECT 1 FROM hold_jobs j
                                   WHERE d.job_kind = 'hold' AND j.payment_id = d.job_id
                                     AND j.state = 'dead')
                ORDER BY d.id LIMIT $2)`,
      values: [retentionSeconds, PURGE_BATCH_SIZE],
    });
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < PURGE_BATCH_SIZE) break;
  }
  return deleted;
}
