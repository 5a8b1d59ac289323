import { traceContextHeaders } from '../../outbox/trace-context.js';
import type { ConsumedRecord, ProducerRecord } from '../../platform/kafka/kafka.js';

/** Where a consumed record came from: kept with its job so a dead letter can carry it. */
export interface SourceRecord {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string;
}

/**
 * Headers of a dead letter (topic `payments.settlement.dlq`): where the record came from and
 * why it was given up on. Key and value are the original record's, unchanged, so `dlq:replay`
 * can put it back on the main topic as it was (same event id).
 */
export const DLQ_HEADERS = {
  originalTopic: 'dlq_original_topic',
  originalPartition: 'dlq_original_partition',
  originalOffset: 'dlq_original_offset',
  eventId: 'dlq_event_id',
  errorClass: 'dlq_error_class',
  errorMessage: 'dlq_error_message',
  attempts: 'dlq_attempts',
  firstFailureAt: 'dlq_first_failure_at',
  lastFailureAt: 'dlq_last_failure_at',
  /** The other side's latest answer to a status inquiry ('not_found', 'none': never asked). */
  lastInquiry: 'dlq_last_inquiry',
  /** Calls that never reached the other side (refused, breaker open): not attempts. */
  notSent: 'dlq_not_sent',
} as const;

/**
 * Set by `dlq:replay` on the records it puts back on the payments topic: one random token per
 * replay run. Only a copy carrying a token its dead job has not seen revives the job; a stray
 * duplicate of `payment.created` never does (DESIGN 50).
 */
export const REPLAY_TOKEN_HEADER = 'dlq_replay_token';

export interface DeadLetterReason {
  eventId: string | null;
  errorClass: string;
  errorMessage: string;
  attempts: number;
  firstFailureAt: Date;
  lastFailureAt: Date;
  /** Jobs only (DESIGN 106): the last inquiry's answer and the calls never sent. */
  lastInquiry?: string;
  notSent?: number;
}

export function toDeadLetter(
  record: SourceRecord,
  reason: DeadLetterReason,
): ProducerRecord & { key: string } {
  const headers = deadLetterHeaders(record, reason);
  // The payment's trace context travels on with the record (it is also in the value).
  Object.assign(headers, traceContextHeaders(record.value));
  return { key: record.key ?? '', value: record.value, headers };
}

/**
 * A record the consumer could not accept, kept as it was consumed: the raw value bytes (it need
 * not be text) and all of its headers, with the dead-letter headers added. `dlq:replay --list`
 * shows the ones without an event id.
 */
export function toPoisonDeadLetter(
  record: ConsumedRecord,
  reason: DeadLetterReason,
): ProducerRecord {
  const headers = {
    ...record.headers,
    ...deadLetterHeaders(record, reason),
  };
  return { key: record.key ?? '', value: record.value ?? Buffer.alloc(0), headers };
}

function deadLetterHeaders(
  record: Omit<SourceRecord, 'value'>,
  reason: DeadLetterReason,
): Record<string, string> {
  const headers: Record<string, string> = {
    [DLQ_HEADERS.originalTopic]: record.topic,
    [DLQ_HEADERS.originalPartition]: String(record.partition),
    [DLQ_HEADERS.originalOffset]: record.offset,
    [DLQ_HEADERS.errorClass]: reason.errorClass,
    [DLQ_HEADERS.errorMessage]: reason.errorMessage.slice(0, 1_000),
    [DLQ_HEADERS.attempts]: String(reason.attempts),
    [DLQ_HEADERS.firstFailureAt]: reason.firstFailureAt.toISOString(),
    [DLQ_HEADERS.lastFailureAt]: reason.lastFailureAt.toISOString(),
  };
  if (reason.lastInquiry !== undefined) headers[DLQ_HEADERS.lastInquiry] = reason.lastInquiry;
  if (reason.notSent !== undefined) headers[DLQ_HEADERS.notSent] = String(reason.notSent);
  if (reason.eventId !== null) {
    headers[DLQ_HEADERS.eventId] = reason.eventId;
    headers.ce_id = reason.eventId;
  }
  return headers;
}
