import type { ConsumedRecord } from '../../src/platform/kafka/kafka.js';
import { DLQ_HEADERS, REPLAY_TOKEN_HEADER } from '../../src/jobs/dead-letters/dead-letter.js';
import type { PaymentEventType } from '../../src/payments/payment-event-id.js';

/** Where one copy of an event sits on the topic. */
export interface EventCopy {
  eventId: string;
  partition: number;
  offset: bigint;
  /** Put back by `dlq:replay` (it carries a replay token), not sent by the relay. */
  replayed: boolean;
}

/** The copies of one payment's events on the payments topic, in the order they were read. */
export interface PaymentEvents {
  created: EventCopy[];
  /** Manual-capture payments only (issue 40): the hold placed, and voided. */
  authorized: EventCopy[];
  settled: EventCopy[];
  failed: EventCopy[];
  canceled: EventCopy[];
  /** Records whose key is not the payment id their `ce_subject` names. */
  keyMismatches: number;
}

/** A payment without any copy on the topic (yet). */
export function noPaymentEvents(): PaymentEvents {
  return { created: [], authorized: [], settled: [], failed: [], canceled: [], keyMismatches: 0 };
}

/** Records that cannot be attributed: no `ce_id`, `ce_type` or subject. */
export interface MalformedRecord {
  partition: number;
  offset: string;
  problem: string;
}

const TYPES = {
  'payment.created': 'created',
  'payment.authorized': 'authorized',
  'payment.settled': 'settled',
  'payment.failed': 'failed',
  'payment.canceled': 'canceled',
} as const satisfies Record<PaymentEventType, keyof PaymentEvents>;

/**
 * An index of the payments topic built one record at a time (only ids and positions are kept,
 * not the payloads, so a topic of millions of events fits in memory). The headers carry
 * everything needed (BRIEF section 5: `ce_id`, `ce_type`, `ce_subject`), so values are not
 * parsed.
 */
export function createEventLog() {
  const payments = new Map<string, PaymentEvents>();
  /** Refund events (verify-refunds.ts): copies per event id, and their keys' payment ids. */
  const refunds = new Map<string, { copies: number; paymentIds: Set<string | null> }>();
  const malformed: MalformedRecord[] = [];
  /** The distinct `dlq:replay` tokens seen on copies of each event id: its replays. */
  const replayTokens = new Map<string, Set<string>>();
  const seenIds = new Set<string>();
  let records = 0;
  let copies = 0;

  return {
    payments,
    refunds,
    malformed,
    replayTokens,
    /** Records read, and how many of them repeat an event id already seen (at least once). */
    counts: () => ({ read: records, distinct: seenIds.size, copies }),
    add(record: ConsumedRecord): void {
      records++;
      const { ce_id: eventId, ce_type: type, ce_subject: subject } = record.headers;
      const paymentId = subject ?? record.key;
      const replayToken = record.headers[REPLAY_TOKEN_HEADER];
      if (eventId !== undefined && replayToken !== undefined) {
        const tokens = replayTokens.get(eventId) ?? new Set<string>();
        tokens.add(replayToken);
        replayTokens.set(eventId, tokens);
      }
      if (eventId !== undefined && type?.startsWith('refund.')) {
        const seen = refunds.get(eventId) ?? { copies: 0, paymentIds: new Set() };
        seen.copies++;
        seen.paymentIds.add(record.key);
        refunds.set(eventId, seen);
        if (seenIds.has(eventId)) copies++;
        else seenIds.add(eventId);
        return;
      }
      const kind = type === undefined ? undefined : TYPES[type as keyof typeof TYPES];
      if (eventId === undefined || kind === undefined || paymentId === null) {
        malformed.push({
          partition: record.partition,
          offset: record.offset,
          problem: `ce_id ${eventId ?? 'missing'}, ce_type ${type ?? 'missing'}, subject ${paymentId ?? 'missing'}`,
        });
        return;
      }
      if (seenIds.has(eventId)) copies++;
      else seenIds.add(eventId);
      let events = payments.get(paymentId);
      if (!events) {
        events = noPaymentEvents();
        payments.set(paymentId, events);
      }
      if (record.key !== paymentId) events.keyMismatches++;
      events[kind].push({
        eventId,
        partition: record.partition,
        offset: BigInt(record.offset),
        replayed: replayToken !== undefined,
      });
    },
  };
}

export type EventLog = ReturnType<typeof createEventLog>;

/** The dead letters of one event id: how many, keyed by what, and from which source records. */
export interface DeadLetterCopies {
  count: number;
  /** The letters' Kafka keys: the payment id, for charges and refunds alike. */
  keys: Set<string | null>;
  /**
   * Letters per source record (`topic:partition:offset` of the consumed record the job was
   * given up on). A charge revived by `dlq:replay` dies from the replayed copy, at another
   * offset; the same source twice is one letter sent twice. Refund letters name no record
   * (offset -1) and are not counted here.
   */
  bySource: Map<string, number>;
}

/** Why one letter was written: its key (the payment id, for charges and refunds) and error class. */
export interface DeadLetterReason {
  key: string | null;
  eventId: string | null;
  /** `dlq_error_class`, or `unknown` when the letter has none. */
  errorClass: string;
}

/** The dead-letter topic: how many dead letters each event id has, and where they came from. */
export function createDeadLetterLog() {
  const byEventId = new Map<string, number>();
  const copies = new Map<string, DeadLetterCopies>();
  const reasons: DeadLetterReason[] = [];
  let records = 0;
  let withoutEventId = 0;
  return {
    byEventId,
    copies,
    reasons,
    counts: () => ({ read: records, eventIds: byEventId.size, withoutEventId }),
    add(record: ConsumedRecord): void {
      records++;
      const eventId = record.headers[DLQ_HEADERS.eventId];
      reasons.push({
        key: record.key,
        eventId: eventId ?? null,
        errorClass: record.headers[DLQ_HEADERS.errorClass] ?? 'unknown',
      });
      if (eventId === undefined) {
        withoutEventId++;
        return;
      }
      byEventId.set(eventId, (byEventId.get(eventId) ?? 0) + 1);
      const seen: DeadLetterCopies = copies.get(eventId) ?? {
        count: 0,
        keys: new Set(),
        bySource: new Map(),
      };
      seen.count++;
      seen.keys.add(record.key);
      const offset = record.headers[DLQ_HEADERS.originalOffset];
      if (offset !== undefined && offset !== '-1') {
        const source = `${record.headers[DLQ_HEADERS.originalTopic] ?? '?'}:${record.headers[DLQ_HEADERS.originalPartition] ?? '?'}:${offset}`;
        seen.bySource.set(source, (seen.bySource.get(source) ?? 0) + 1);
      }
      copies.set(eventId, seen);
    },
  };
}

export type DeadLetterLog = ReturnType<typeof createDeadLetterLog>;
