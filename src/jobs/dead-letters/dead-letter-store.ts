import type { Pool, Queryable } from '../../platform/database/db.js';
import type { ProducerRecord } from '../../platform/kafka/kafka.js';
import type { Logger } from '../../platform/telemetry/logger.js';

/**
 * Dead letters kept in the database until the dead-letter topic has them (migration 0021,
 * DESIGN record 49). A letter is stored in the transaction that gives up on its job (or before
 * the consumer moves past a poison record) and published afterwards by `createDeadLetterPublisher`
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

interface ClaimedLetter {
  id: string;
  topic: string;
  record: ProducerRecord;
}

/** Unpublished letters, oldest first, leased for `leaseMs` (several settlement processes). */
async function claimUnpublished(
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
  }>({
    name: 'dead-letters.claim',
    text: `UPDATE dead_letters d
              SET attempts = d.attempts + 1,
                  locked_until = now() + make_interval(secs => $2::double precision / 1000)
             FROM (SELECT id FROM dead_letters
                    WHERE published_at IS NULL AND next_attempt_at <= now()
                      AND (locked_until IS NULL OR locked_until <= now())
                    ORDER BY id LIMIT $1
                    FOR UPDATE SKIP LOCKED) due
            WHERE d.id = due.id
        RETURNING d.id, d.topic, d.message_key, d.message_value, d.headers`,
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
    }))
    .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

async function markPublished(db: Queryable, ids: readonly string[]): Promise<void> {
  await db.query({
    name: 'dead-letters.published',
    text: `UPDATE dead_letters SET published_at = now(), locked_until = NULL, last_error = NULL
            WHERE id = ANY($1::bigint[])`,
    values: [ids],
  });
}

async function markUnsent(
  db: Queryable,
  ids: readonly string[],
  error: unknown,
  delayMs: number,
): Promise<void> {
  await db.query({
    name: 'dead-letters.unsent',
    text: `UPDATE dead_letters
              SET locked_until = NULL, last_error = $2,
                  next_attempt_at = now() + make_interval(secs => $3::double precision / 1000)
            WHERE id = ANY($1::bigint[])`,
    values: [
      ids,
      (error instanceof Error ? error.message : String(error)).slice(0, 1_000),
      delayMs,
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

/** Sends one batch of dead letters; resolves once the broker acknowledged them all. */
export type SendDeadLetters = (
  batches: readonly { topic: string; records: readonly ProducerRecord[] }[],
) => Promise<void>;

export interface DeadLetterPublisherDeps {
  pool: Pool;
  /** A bounded send (dead-letter-producer): it fails, it does not hang, when Kafka is frozen. */
  send: SendDeadLetters;
  logger: Logger;
  /** The wait before sending again after `failures` failed sends in a row. */
  retryDelayMs: (failures: number) => number;
  /** When nothing wakes the publisher: a letter another process stored, a missed wake. */
  pollMs: number;
  batchSize?: number;
  /** Longer than one bounded send, so two processes do not send the same row at once. */
  leaseMs?: number;
  /** Published letters are deleted after this long (DEAD_LETTER_RETENTION_SECONDS). */
  retentionSeconds?: number;
  /** How often the loop purges (default a minute). */
  purgeIntervalMs?: number;
}

export interface DeadLetterPublisher {
  /** A letter was stored: publish it now. */
  wake: () => void;
  /** Publishes what is due once: the step tests drive. Returns how many letters Kafka took. */
  publishDue: () => Promise<number>;
  start: () => void;
  /** Stops the loop and waits for the send in flight (bounded by the producer). */
  stop: () => Promise<void>;
}

/**
 * The dead letters' relay: claims unpublished letters in id order, sends them in one bounded
 * request, marks them published. A failed send leaves them unpublished with a backoff; a crash
 * after the send and before the mark sends them again with the same event id (at least once,
 * never two different letters for one job).
 */
export function createDeadLetterPublisher(deps: DeadLetterPublisherDeps): DeadLetterPublisher {
  const batchSize = deps.batchSize ?? 100;
  const leaseMs = deps.leaseMs ?? 120_000;
  const purgeIntervalMs = deps.purgeIntervalMs ?? 60_000;
  let lastPurge = Number.NEGATIVE_INFINITY;
  let failures = 0;
  // Read through a function: the loop's checks see changes made by stop() and wake().
  const state = { running: false, woken: false };
  const running = () => state.running;
  const woken = () => state.woken;
  let wakeUp: (() => void) | undefined;
  let loop: Promise<void> | undefined;

  async function publishDue(): Promise<number> {
    let sent = 0;
    for (;;) {
      const letters = await claimUnpublished(deps.pool, batchSize, leaseMs);
      if (letters.length === 0) return sent;
      const ids = letters.map((letter) => letter.id);
      const byTopic = new Map<string, ProducerRecord[]>();
      for (const { topic, record } of letters) {
        byTopic.set(topic, [...(byTopic.get(topic) ?? []), record]);
      }
      try {
        await deps.send([...byTopic].map(([topic, records]) => ({ topic, records })));
      } catch (error) {
        failures++;
        const delayMs = deps.retryDelayMs(failures);
        deps.logger.warn(
          { err: error, dead_letters: ids.length, retry_in_ms: delayMs },
          'dead-letter publish failed; kept in the database and sent again later',
        );
        await markUnsent(deps.pool, ids, error, delayMs);
        throw error;
      }
      failures = 0;
      await markPublished(deps.pool, ids);
      sent += ids.length;
      if (letters.length < batchSize) return sent;
    }
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        resolve();
      }
      wakeUp = done;
    });
  }

  async function run(): Promise<void> {
    while (running()) {
      state.woken = false;
      let waitMs = deps.pollMs;
      try {
        await publishDue();
        if (deps.retentionSeconds !== undefined && Date.now() - lastPurge >= purgeIntervalMs) {
          lastPurge = Date.now();
          const deleted = await purgePublishedDeadLetters(deps.pool, deps.retentionSeconds);
          if (deleted > 0) deps.logger.debug({ deleted }, 'purged published dead letters');
        }
      } catch (error) {
        // A failed send was logged and its rows rescheduled; a database error waits a poll.
        if (failures === 0) deps.logger.warn({ err: error }, 'dead-letter publisher step failed');
        waitMs = Math.min(deps.pollMs, deps.retryDelayMs(Math.max(failures, 1)));
      }
      if (running() && !woken()) await sleep(waitMs);
    }
  }

  return {
    wake: () => {
      state.woken = true;
      wakeUp?.();
    },
    publishDue,
    start: () => {
      if (state.running) return;
      state.running = true;
      loop = run();
    },
    stop: async () => {
      state.running = false;
      wakeUp?.();
      await loop;
    },
  };
}
