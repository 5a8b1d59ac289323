import { withTransaction, type Pool } from '../platform/db.js';
import type { ConsumedRecord } from '../platform/kafka.js';
import type { Logger } from '../platform/logger.js';
import { toDeadLetter, toPoisonDeadLetter, type DeadLetterReason } from '../jobs/dead-letter.js';
import { storeDeadLetter } from '../jobs/dead-letter-store.js';
import { markDead } from './settlement-job-failures.js';
import { type ClaimedJob, type Failure, type SourceRecord } from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';
import type { SettlementRunCounts } from './settlement-run-counts.js';

/** Sends a dead letter; resolves once the broker acknowledged it. */
export type PublishDeadLetter = (record: ReturnType<typeof toDeadLetter>) => Promise<void>;

/** Publishes a record to the dead-letter topic and counts it. */
export async function sendDeadLetter(
  publish: PublishDeadLetter,
  record: SourceRecord,
  reason: DeadLetterReason,
): Promise<void> {
  await publish(toDeadLetter(record, reason));
  settlementMetrics.deadLettered.inc({ error_class: reason.errorClass });
}

/** Where the settlement worker keeps its dead letters (dead-letter-store) and who sends them. */
export interface DeadLetterOutbox {
  /** The dead-letter topic. */
  topic: string;
  /** A letter was stored: the publisher sends it now rather than at its next poll. */
  wake: () => void;
}

/**
 * Retries exhausted: the job is marked dead and its dead letter stored in ONE transaction, then
 * the publisher is woken (dead-letter-store). Kafka is not waited on: a frozen broker holds no
 * slot and no lease, and the letter waits in the database until the topic takes it (record 30).
 * One letter per job and revival (the dedup key carries the replay token): a job claimed
 * `exhausted` again after a crash before the commit stores it once.
 */
export async function deadLetterJob(
  deps: { pool: Pool; deadLetters: DeadLetterOutbox; logger: Logger },
  job: ClaimedJob,
  failure: Failure,
  counts: SettlementRunCounts,
): Promise<void> {
  const times = { firstFailureAt: job.firstFailureAt ?? new Date(), lastFailureAt: new Date() };
  const letter = toDeadLetter(job.record, {
    eventId: job.eventId,
    errorClass: failure.errorClass,
    errorMessage: failure.message,
    attempts: job.attempts,
    ...times,
  });
  const stored = await withTransaction(deps.pool, async (client) => {
    const { rows } = await client.query<{ replay_token: string | null }>(
      'SELECT replay_token FROM settlement_jobs WHERE payment_id = $1 FOR UPDATE',
      [job.paymentId],
    );
    await markDead(client, job, failure);
    return storeDeadLetter(client, {
      dedupKey: `settlement:${job.paymentId}:${rows[0]?.replay_token ?? ''}`,
      eventId: job.eventId,
      topic: deps.deadLetters.topic,
      record: letter,
    });
  });
  deps.deadLetters.wake();
  if (stored) settlementMetrics.deadLettered.inc({ error_class: failure.errorClass });
  counts.deadLettered++;
  deps.logger.warn(
    { payment_id: job.paymentId, attempts: job.attempts, error_class: failure.errorClass },
    'settlement retries exhausted; event dead-lettered',
  );
}

/**
 * A record the consumer cannot accept (poison, unknown payment): stored as it was consumed, once
 * per record (a redelivered batch stores nothing new), and sent by the publisher.
 */
export async function deadLetterPoison(
  deps: { pool: Pool; deadLetters: DeadLetterOutbox },
  record: ConsumedRecord,
  reason: DeadLetterReason,
): Promise<void> {
  const stored = await storeDeadLetter(deps.pool, {
    dedupKey: `record:${record.topic}:${String(record.partition)}:${record.offset}`,
    eventId: reason.eventId,
    topic: deps.deadLetters.topic,
    record: toPoisonDeadLetter(record, reason),
  });
  deps.deadLetters.wake();
  if (stored) settlementMetrics.deadLettered.inc({ error_class: reason.errorClass });
}
