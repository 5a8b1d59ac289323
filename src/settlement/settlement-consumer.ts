import type { Pool } from '../platform/db.js';
import type { ConsumedRecord } from '../platform/kafka.js';
import type { Logger } from '../platform/logger.js';
import { parsePaymentEvent, type ParsedEvent } from './payment-event.js';
import { acceptPaymentCreated, type SourceRecord } from './settlement-repository.js';
import { settlementMetrics } from './settlement-metrics.js';
import type { SettlementWorker } from './settlement-worker.js';

export type HandleOutcome = 'accepted' | 'duplicate' | 'revived' | 'ignored' | 'dead_lettered';

interface HandlerDeps {
  pool: Pool;
  worker: Pick<SettlementWorker, 'wake' | 'deadLetter'>;
  logger: Logger;
}

/**
 * What the settlement consumer does with one record of the payments topic. It only records the
 * work (dedup + processing + durable job, one transaction) and wakes the worker; it never calls
 * the acquirer or sleeps, so a slow or failing acquirer never blocks a partition. Poison
 * records go to the dead-letter topic at once and the partition moves on.
 */
export function createSettlementHandler(deps: HandlerDeps) {
  return async function handle(record: ConsumedRecord): Promise<HandleOutcome> {
    const source: SourceRecord = {
      topic: record.topic,
      partition: record.partition,
      offset: record.offset,
      key: record.key,
      value: record.value?.toString() ?? '',
    };
    const outcome = await acceptEvent(deps, source, parsePaymentEvent(record.value));
    settlementMetrics.consumed.inc({ outcome });
    return outcome;
  };
}

/** Records the job of a `payment.created` event; dead-letters what cannot be one. */
async function acceptEvent(
  deps: HandlerDeps,
  source: SourceRecord,
  event: ParsedEvent,
): Promise<HandleOutcome> {
  if (event.kind === 'poison') {
    await deadLetterPoison(deps, source, null, event.errorClass, event.message);
    return 'dead_lettered';
  }
  if (event.kind === 'ignored') return 'ignored';
  const accepted = await acceptPaymentCreated(deps.pool, event.eventId, event.payment.id, source);
  if (accepted === 'unknown_payment') {
    const message = `no payment ${event.payment.id}`;
    await deadLetterPoison(deps, source, event.eventId, 'unknown_payment', message);
    return 'dead_lettered';
  }
  if (accepted === 'duplicate') settlementMetrics.deduplicated.inc();
  else deps.worker.wake();
  return accepted;
}

async function deadLetterPoison(
  deps: HandlerDeps,
  source: SourceRecord,
  eventId: string | null,
  errorClass: string,
  message: string,
): Promise<void> {
  const now = new Date();
  deps.logger.warn(
    {
      topic: source.topic,
      partition: source.partition,
      offset: source.offset,
      error_class: errorClass,
    },
    'poison record dead-lettered',
  );
  await deps.worker.deadLetter(source, {
    eventId,
    errorClass,
    errorMessage: message,
    attempts: 1,
    firstFailureAt: now,
    lastFailureAt: now,
  });
}
