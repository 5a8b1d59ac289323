import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../src/platform/database/db.js';
import { toKafkaRecord, type KafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { readAllEvents } from '../../tools/support/read-all-events.js';

/** One outbox row as a test wrote it, in creation (id) order. */
export interface BuiltEvent {
  id: string;
  eventId: string;
  eventType: string;
  aggregateId: string;
  topic: string;
  /** Position of this event among its payment's events, from 0. */
  seq: number;
  data: Record<string, unknown>;
  createdAt: Date;
}

export interface PlanOptions {
  /** How many payments the events belong to (round-robin); default one event per payment. */
  payments?: number;
  /** Payment ids to use instead of fresh ones. */
  paymentIds?: readonly string[];
  /** The seq of each payment's first event here (when earlier ones were inserted before). */
  startSeq?: number;
  /** Pads each payment snapshot with this many characters (for records too large to send). */
  padding?: number;
}

/** An event about to be inserted: everything but the row id and creation time. */
export type PlannedEvent = Omit<BuiltEvent, 'id' | 'topic' | 'createdAt'>;

/**
 * `count` events spread round-robin over the payments, so one payment's events interleave with
 * the others'. A payment's event with seq 0 is `payment.created` with its real UUIDv5 id; later
 * ones are `payment.test_step` events with random ids.
 */
export function planOutboxEvents(count: number, options: PlanOptions = {}): PlannedEvent[] {
  const paymentIds =
    options.paymentIds ?? Array.from({ length: options.payments ?? count }, () => randomUUID());
  const seqByPayment = new Map<string, number>();
  return Array.from({ length: count }, (_, index) => {
    const aggregateId = paymentIds[index % paymentIds.length] ?? randomUUID();
    const seq = seqByPayment.get(aggregateId) ?? options.startSeq ?? 0;
    seqByPayment.set(aggregateId, seq + 1);
    return {
      eventId: seq === 0 ? paymentEventId(aggregateId, 'payment.created') : randomUUID(),
      eventType: seq === 0 ? 'payment.created' : 'payment.test_step',
      aggregateId,
      seq,
      data: paymentSnapshot(aggregateId, seq, options.padding ?? 0),
    };
  });
}

/**
 * Inserts the planned events in one statement (one transaction), in order, as the API would
 * have written them; there are no payment rows (the outbox has no foreign key).
 */
export async function insertPlannedEvents(
  db: Queryable,
  planned: readonly PlannedEvent[],
  topic: string,
): Promise<BuiltEvent[]> {
  const { rows } = await db.query<{ id: string; event_id: string; created_at: Date }>(
    `INSERT INTO outbox (event_id, event_type, aggregate_id, topic, data, created_at)
     SELECT e.event_id, e.event_type, e.aggregate_id, $4, e.data, clock_timestamp()
       FROM unnest($1::uuid[], $2::text[], $3::uuid[], $5::jsonb[])
            WITH ORDINALITY AS e(event_id, event_type, aggregate_id, data, n)
      ORDER BY e.n
     RETURNING id, event_id, created_at`,
    [
      planned.map((event) => event.eventId),
      planned.map((event) => event.eventType),
      planned.map((event) => event.aggregateId),
      topic,
      planned.map((event) => JSON.stringify(event.data)),
    ],
  );
  const byEventId = new Map(rows.map((row) => [row.event_id, row]));
  return planned
    .map((event) => {
      const row = byEventId.get(event.eventId);
      if (!row) throw new Error(`outbox row ${event.eventId} was not returned`);
      return { ...event, id: row.id, topic, createdAt: row.created_at };
    })
    .sort((a, b) => Number(a.id) - Number(b.id));
}

/** `planOutboxEvents` then `insertPlannedEvents`: `count` rows for `topic` in one transaction. */
export function insertOutboxEvents(
  db: Queryable,
  count: number,
  options: PlanOptions & { topic: string },
): Promise<BuiltEvent[]> {
  return insertPlannedEvents(db, planOutboxEvents(count, options), options.topic);
}

function paymentSnapshot(id: string, seq: number, padding: number): Record<string, unknown> {
  return {
    id,
    object: 'payment',
    amount: 1_000 + seq,
    currency: 'EUR',
    status: seq === 0 ? 'pending' : 'processing',
    source: 'tok_visa',
    description: padding > 0 ? 'x'.repeat(padding) : null,
    metadata: { seq: String(seq) },
    created_at: new Date(0).toISOString(),
  };
}

/** The outbox rows' publication state, keyed by event id. */
export async function readOutboxState(db: Queryable): Promise<
  Map<
    string,
    {
      publishedAt: Date | null;
      parkedAt: Date | null;
      attempts: number;
      lastError: string | null;
      lockedUntil: Date | null;
    }
  >
> {
  const { rows } = await db.query<{
    event_id: string;
    published_at: Date | null;
    parked_at: Date | null;
    attempts: number;
    last_error: string | null;
    locked_until: Date | null;
  }>('SELECT event_id, published_at, parked_at, attempts, last_error, locked_until FROM outbox');
  return new Map(
    rows.map((row) => [
      row.event_id,
      {
        publishedAt: row.published_at,
        parkedAt: row.parked_at,
        attempts: row.attempts,
        lastError: row.last_error,
        lockedUntil: row.locked_until,
      },
    ]),
  );
}

/** How many rows are still to publish (neither published nor parked). */
export async function countPending(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL AND parked_at IS NULL',
  );
  return rows[0]?.n ?? 0;
}

/**
 * The Kafka record every outbox row must be published as, keyed by event id, built from the
 * row as stored (jsonb normalises the data's key order, so the builder's object is not enough).
 */
export async function expectedRecords(db: Queryable): Promise<Map<string, KafkaRecord>> {
  const events = await readAllEvents(db);
  return new Map(events.map((event) => [event.eventId, toKafkaRecord(event)]));
}
