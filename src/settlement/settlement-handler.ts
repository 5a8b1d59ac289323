import type { Pool } from '../platform/database/db.js';
import type { ConsumedBatch, ConsumedRecord } from '../platform/kafka/kafka.js';
import type { Logger } from '../platform/telemetry/logger.js';
import { REPLAY_TOKEN_HEADER } from '../jobs/dead-letters/dead-letter.js';
import type { Revival } from '../jobs/job-store.js';
import { parsePaymentEvent } from './payment-event.js';
import {
  recordAndClaimCreatedEvents,
  type CreatedEvent,
  type RecordOutcome,
} from './record-created-events.js';
import type { SourceRecord } from '../jobs/dead-letters/dead-letter.js';
import { settlementMetrics } from './settlement-metrics.js';
import { failSpan, startConsumeSpan } from './settlement-spans.js';
import type { SettlementWorker } from './settlement-worker.js';

export type HandleOutcome = 'accepted' | 'duplicate' | 'revived' | 'ignored' | 'dead_lettered';

interface HandlerDeps {
  pool: Pool;
  /**
   * With `reserve` and `adopt`, the intake claims the jobs it records for this worker's free
   * slots (claim-on-insert.ts) and hands them over after its commit.
   */
  worker: Pick<SettlementWorker, 'wake' | 'deadLetter'> &
    Partial<Pick<SettlementWorker, 'reserve' | 'adopt'>>;
  logger: Logger;
  /**
   * Revives the dead jobs of replayed copies of other resources' events (dlq:replay puts a
   * `refund.created` back on the topic with a replay token): the ids revived. The composition
   * root passes refunds' (src/refunds/refund-revival.ts); without it such copies are ignored.
   */
  reviveRefunds?: (revivals: readonly Revival[]) => Promise<ReadonlySet<string>>;
  /** Likewise for a replayed `payment.authorized` (a dead hold job's letter): the payments revived. */
  reviveHolds?: (revivals: readonly Revival[]) => Promise<ReadonlySet<string>>;
  /** The newest event data major it reads (READABLE_DATA_MAJOR unless given: tests' upgrade). */
  readableDataMajor?: number;
}

interface Poison {
  record: ConsumedRecord;
  eventId: string | null;
  errorClass: string;
  message: string;
}

/**
 * What the settlement consumer does with a batch of records of one partition. It only records
 * the work, all of the batch's `payment.created` events in ONE transaction (dedup rows,
 * processing, durable jobs: record-created-events), and wakes the worker; it never calls the
 * acquirer or sleeps, so a slow or failing acquirer never blocks a partition. Poison records are
 * stored as dead letters (raw bytes, headers, the envelope's event id when readable) with the
 * batch, not ahead of it or instead of it, and sent to the dead-letter topic by the publisher
 * (dead-letter-store), so a frozen broker does not hold the partition. A `refund.created`
 * copy republished by dlq:replay (it has a replay token) revives its dead refund job. The
 * caller resolves the batch's offsets only after this resolved: a batch whose transaction or
 * dead letters failed is redelivered whole, and dedup (processed events, the letters' dedup key)
 * makes the redelivery record everything once.
 */
async function revive(
  outcomes: HandleOutcome[],
  revivals: readonly { index: number; revival: Revival }[],
  reviveJobs: ((revivals: readonly Revival[]) => Promise<ReadonlySet<string>>) | undefined,
): Promise<void> {
  if (reviveJobs === undefined || revivals.length === 0) return;
  const revived = await reviveJobs(revivals.map(({ revival }) => revival));
  for (const { index, revival } of revivals) {
    if (revived.has(revival.id)) outcomes[index] = 'revived';
  }
}

export function createSettlementHandler(deps: HandlerDeps) {
  const handleBatch = async function handleBatch(batch: ConsumedBatch): Promise<HandleOutcome[]> {
    const outcomes: HandleOutcome[] = [];
    const created: { index: number; event: CreatedEvent }[] = [];
    const poison: Poison[] = [];
    const refundRevivals: { index: number; revival: Revival }[] = [];
    const holdRevivals: { index: number; revival: Revival }[] = [];
    for (const record of batch.records) {
      const source = toSource(record);
      const event = parsePaymentEvent(record.value, deps.readableDataMajor);
      if (event.kind === 'poison') {
        poison.push({
          record,
          eventId: event.eventId ?? headerEventId(record),
          errorClass: event.errorClass,
          message: event.message,
        });
        outcomes.push('dead_lettered');
      } else if (event.kind === 'ignored') {
        const token = record.headers[REPLAY_TOKEN_HEADER];
        if (event.refundId !== undefined && token !== undefined) {
          refundRevivals.push({
            index: outcomes.length,
            revival: { id: event.refundId, token },
          });
        }
        if (event.heldPaymentId !== undefined && token !== undefined) {
          holdRevivals.push({
            index: outcomes.length,
            revival: { id: event.heldPaymentId, token },
          });
        }
        outcomes.push('ignored');
      } else {
        created.push({
          index: outcomes.length,
          event: {
            eventId: event.eventId,
            paymentId: event.paymentId,
            replayToken: record.headers[REPLAY_TOKEN_HEADER] ?? null,
            source,
          },
        });
        outcomes.push('accepted');
      }
    }
    const recorded = await recordAndClaim(created.map(({ event }) => event));
    // A replayed dead refund or hold job: pending again, and its worker's next poll takes it.
    await revive(outcomes, refundRevivals, deps.reviveRefunds);
    await revive(outcomes, holdRevivals, deps.reviveHolds);
    created.forEach(({ index, event }, i) => {
      const outcome = recorded.outcomes[i] ?? 'duplicate';
      if (outcome === 'unknown_payment') {
        const message = `no payment ${event.paymentId}`;
        const record = batch.records[index];
        if (record) poison.push({ record, eventId: event.eventId, errorClass: outcome, message });
        outcomes[index] = 'dead_lettered';
      } else {
        outcomes[index] = outcome;
      }
    });
    await Promise.all(poison.map((letter) => deadLetterPoison(deps, letter)));
    if (recorded.unclaimed > 0 || outcomes.some((outcome) => outcome === 'revived')) {
      deps.worker.wake();
    }
    for (const outcome of outcomes) {
      settlementMetrics.consumed.inc({ outcome });
      if (outcome === 'duplicate') settlementMetrics.deduplicated.inc();
    }
    return outcomes;
  };
  /**
   * Records the events, claiming the new jobs for the worker's free slots (if it offers them),
   * and hands those to the worker once committed. `unclaimed`: new jobs left for its claims.
   */
  const recordAndClaim = async (
    events: CreatedEvent[],
  ): Promise<{ outcomes: RecordOutcome[]; unclaimed: number }> => {
    const { reserve, adopt } = deps.worker;
    const claim = events.length > 0 && reserve && adopt ? reserve(events.length) : null;
    let claimed: Parameters<NonNullable<typeof adopt>>[0] = [];
    try {
      const recorded = await recordAndClaimCreatedEvents(deps.pool, events, claim);
      claimed = recorded.claimed;
      const accepted = recorded.outcomes.filter((outcome) => outcome === 'accepted').length;
      return { outcomes: recorded.outcomes, unclaimed: accepted - claimed.length };
    } finally {
      if (claim) adopt?.(claimed, claim);
    }
  };
  // Each record in its own CONSUMER span, continuing the record's trace (settlement-spans),
  // open for as long as its batch is being recorded.
  return async (batch: ConsumedBatch): Promise<HandleOutcome[]> => {
    const spans = batch.records.map(startConsumeSpan);
    try {
      const outcomes = await handleBatch(batch);
      spans.forEach((span, i) => span.setAttribute('settlement.outcome', outcomes[i] ?? 'unknown'));
      return outcomes;
    } catch (error) {
      for (const span of spans) failSpan(span, error);
      throw error;
    } finally {
      for (const span of spans) span.end();
    }
  };
}

function toSource(record: ConsumedRecord): SourceRecord {
  return {
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    key: record.key,
    value: record.value?.toString() ?? '',
  };
}

/** The `ce_id` header when the value could not be read (binary-mode CloudEvents carry it). */
function headerEventId(record: ConsumedRecord): string | null {
  const id = record.headers.ce_id;
  return id !== undefined && UUID.test(id) ? id.toLowerCase() : null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function deadLetterPoison(deps: HandlerDeps, poison: Poison): Promise<void> {
  const { record, eventId, errorClass, message } = poison;
  const now = new Date();
  deps.logger.warn(
    {
      topic: record.topic,
      partition: record.partition,
      offset: record.offset,
      event_id: eventId,
      error_class: errorClass,
    },
    'poison record dead-lettered',
  );
  await deps.worker.deadLetter(record, {
    eventId,
    errorClass,
    errorMessage: message,
    attempts: 1,
    firstFailureAt: now,
    lastFailureAt: now,
  });
}
