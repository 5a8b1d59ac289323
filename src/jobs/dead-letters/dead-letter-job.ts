import { withTransaction, type Pool } from '../../platform/database/db.js';
import { toDeadLetter, type SourceRecord } from './dead-letter.js';
import { storeDeadLetter } from './dead-letter-store.js';
import { markJobDead } from '../job-store.js';
import type { ClaimedJob, Failure, JobTable } from '../job-table.js';

/** Where a process keeps its dead letters (dead-letter-store) and who sends them. */
export interface DeadLetterOutbox {
  /** The dead-letter topic. */
  topic: string;
  /** A letter was stored: the publisher sends it now rather than at its next poll. */
  wake: () => void;
}

/** What an exhausted job's dead letter carries: the event that asked for the work. */
export interface JobLetter {
  /** The event's id (`payment.created`, `refund.created`): what `dlq:replay` puts back. */
  eventId: string;
  /** The event's record, as consumed or as it would have been published. */
  record: SourceRecord;
}

/**
 * Attempts exhausted: the job is marked dead and its dead letter stored in ONE transaction, then
 * the publisher is woken (dead-letter-store). Kafka is not waited on: a frozen broker holds no
 * slot and no lease, and the letter waits in the database until the topic takes it (DESIGN 49).
 * One letter per job and revival (the dedup key carries the replay token). Returns whether this
 * call stored the letter. Throws LeaseLostError (nothing written) when another claim holds the job.
 */
export async function deadLetterJob(
  pool: Pool,
  deadLetters: DeadLetterOutbox,
  jobs: JobTable,
  job: ClaimedJob,
  failure: Failure,
  letter: JobLetter,
  lastInquiry?: string,
): Promise<boolean> {
  const stored = await withTransaction(pool, async (client) => {
    const { replayToken } = await markJobDead(client, jobs, job, failure, lastInquiry);
    return storeDeadLetter(client, {
      dedupKey: `${jobs.kind}:${job.id}:${replayToken ?? ''}`,
      eventId: letter.eventId,
      topic: deadLetters.topic,
      ...(jobs.kind === 'webhook' ? {} : { job: { kind: jobs.kind, id: job.id } }),
      record: toDeadLetter(letter.record, {
        eventId: letter.eventId,
        errorClass: failure.errorClass,
        errorMessage: failure.message,
        attempts: job.attempts,
        firstFailureAt: job.firstFailureAt ?? new Date(),
        lastFailureAt: new Date(),
        lastInquiry: lastInquiry ?? job.lastInquiry ?? 'none',
        notSent: job.notSent,
      }),
    });
  });
  deadLetters.wake();
  return stored;
}
