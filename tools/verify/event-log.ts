import type { ConsumedRecord } from '../../src/platform/kafka.js';
import { DLQ_HEADERS } from '../../src/settlement/dead-letter.js';

/** Where one copy of an event sits on the topic. */
export interface EventCopy {
  eventId: string;
  partition: number;
  offset: bigint;
}

/** The copies of one payment's events on the payments topic, in the order they were read. */
export interface PaymentEvents {
  created: EventCopy[];
  settled: EventCopy[];
  failed: EventCopy[];
  /** Records whose key is not the payment id their `ce_subject` names. */
  keyMismatches: number;
}

/** Records that cannot be attributed: no `ce_id`, `ce_type` or subject. */
export interface MalformedRecord {
  partition: number;
  offset: string;
  problem: string;
}

const TYPES = {
  'payment.created': 'created',
  'payment.settled': 'settled',
  'payment.failed': 'failed',
} as const;

/**
 * An index of the payments topic built one record at a time (only ids and positions are kept,
 * not the payloads, so a topic of millions of events fits in memory). The headers carry
 * everything needed (BRIEF section 5: `ce_id`, `ce_type`, `ce_subject`), so values are not
 * parsed.
 */
export function createEventLog() {
  const payments = new Map<string, PaymentEvents>();
  const malformed: MalformedRecord[] = [];
  const seenIds = new Set<string>();
  let records = 0;
  let copies = 0;

  return {
    payments,
    malformed,
    /** Records read, and how many of them repeat an event id already seen (at least once). */
    counts: () => ({ read: records, distinct: seenIds.size, copies }),
    add(record: ConsumedRecord): void {
      records++;
      const { ce_id: eventId, ce_type: type, ce_subject: subject } = record.headers;
      const paymentId = subject ?? record.key;
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
        events = { created: [], settled: [], failed: [], keyMismatches: 0 };
        payments.set(paymentId, events);
      }
      if (record.key !== paymentId) events.keyMismatches++;
      events[kind].push({ eventId, partition: record.partition, offset: BigInt(record.offset) });
    },
  };
}

export type EventLog = ReturnType<typeof createEventLog>;

/** The dead-letter topic: how many dead letters each event id has. */
export function createDeadLetterLog() {
  const byEventId = new Map<string, number>();
  let records = 0;
  let withoutEventId = 0;
  return {
    byEventId,
    counts: () => ({ read: records, eventIds: byEventId.size, withoutEventId }),
    add(record: ConsumedRecord): void {
      records++;
      const eventId = record.headers[DLQ_HEADERS.eventId];
      if (eventId === undefined) withoutEventId++;
      else byEventId.set(eventId, (byEventId.get(eventId) ?? 0) + 1);
    },
  };
}

export type DeadLetterLog = ReturnType<typeof createDeadLetterLog>;
