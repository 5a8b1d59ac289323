import { withTransaction, type Pool, type PoolClient } from '../platform/db.js';
import type { SourceRecord } from '../jobs/dead-letter.js';
import { reviveDeadJobs } from '../jobs/job-store.js';
import { SETTLEMENT_JOBS } from '../jobs/job-table.js';
import { moveToProcessing } from '../payments/payment-writes.js';

/** A parsed `payment.created` record of one consumed batch. */
export interface CreatedEvent {
  eventId: string;
  paymentId: string;
  /** Set on copies republished by `dlq:replay` (header `dlq_replay_token`): may revive. */
  replayToken: string | null;
  source: SourceRecord;
}

export type RecordOutcome = 'accepted' | 'duplicate' | 'revived' | 'unknown_payment';

/**
 * Records a whole batch of `payment.created` events in ONE transaction, with one multi-row
 * statement per step: the processed-event rows (dedup by event id, I4, ON CONFLICT DO NOTHING),
 * pending -> processing for the payments of the fresh ones (conditional), their durable jobs,
 * and the revival of dead jobs named by a replay copy. Either all of it commits or none (the
 * caller resolves the batch's offsets only after this resolved). Returns one outcome per event,
 * in order. A copy seen before changes nothing unless it carries a replay token its dead job has
 * not been revived with; an event whose payment does not exist writes nothing (dead-lettered by
 * the caller, so a replay after a fix is not swallowed by a dedup row).
 */
export function recordCreatedEvents(
  pool: Pool,
  events: readonly CreatedEvent[],
): Promise<RecordOutcome[]> {
  if (events.length === 0) return Promise.resolve([]);
  return withTransaction(pool, async (client) => {
    const known = await knownPayments(client, events);
    const firstCopies = new Map<string, CreatedEvent>();
    for (const event of events) {
      if (known.has(event.paymentId) && !firstCopies.has(event.eventId)) {
        firstCopies.set(event.eventId, event);
      }
    }
    const fresh = await insertProcessedEvents(client, [...firstCopies.values()]);
    const freshEvents = [...firstCopies.values()].filter((event) => fresh.has(event.eventId));
    const moved = await moveToProcessing(
      client,
      freshEvents.map((event) => event.paymentId),
    );
    await insertJobs(
      client,
      freshEvents.filter((event) => moved.has(event.paymentId)),
    );
    const revived = await reviveDeadJobs(
      client,
      SETTLEMENT_JOBS,
      events.flatMap((event) =>
        event.replayToken !== null && known.has(event.paymentId)
          ? [{ id: event.paymentId, token: event.replayToken }]
          : [],
      ),
    );
    const revivedSeen = new Set<string>();
    return events.map((event): RecordOutcome => {
      if (!known.has(event.paymentId)) return 'unknown_payment';
      if (firstCopies.get(event.eventId) === event && fresh.has(event.eventId)) return 'accepted';
      if (revived.has(event.paymentId) && !revivedSeen.has(event.paymentId)) {
        if (event.replayToken === revived.get(event.paymentId)) {
          revivedSeen.add(event.paymentId);
          return 'revived';
        }
      }
      return 'duplicate';
    });
  });
}

async function knownPayments(
  client: PoolClient,
  events: readonly CreatedEvent[],
): Promise<Set<string>> {
  const { rows } = await client.query<{ id: string }>({
    name: 'intake.known-payments',
    text: 'SELECT id FROM payments WHERE id = ANY($1::uuid[])',
    values: [[...new Set(events.map((event) => event.paymentId))]],
  });
  return new Set(rows.map((row) => row.id));
}

/** The dedup rows; returns the event ids that were new. Sorted, so batches lock in one order. */
async function insertProcessedEvents(
  client: PoolClient,
  events: readonly CreatedEvent[],
): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const sorted = [...events].sort((a, b) => a.eventId.localeCompare(b.eventId));
  const { rows } = await client.query<{ event_id: string }>({
    name: 'intake.insert-processed-events',
    text: `INSERT INTO processed_events (event_id, event_type, payment_id)
     SELECT e.event_id, 'payment.created', e.payment_id
       FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS e(event_id, payment_id, n)
      ORDER BY e.n
     ON CONFLICT (event_id) DO NOTHING
     RETURNING event_id`,
    values: [sorted.map((event) => event.eventId), sorted.map((event) => event.paymentId)],
  });
  return new Set(rows.map((row) => row.event_id));
}

/** One durable job per moved payment, with the record it came from (for a dead letter). */
async function insertJobs(client: PoolClient, events: readonly CreatedEvent[]): Promise<void> {
  const onePerPayment = [...new Map(events.map((event) => [event.paymentId, event])).values()];
  if (onePerPayment.length === 0) return;
  const column = <T>(pick: (event: CreatedEvent) => T) => onePerPayment.map(pick);
  await client.query({
    name: 'intake.insert-jobs',
    text: `INSERT INTO settlement_jobs (payment_id, event_id, source_topic, source_partition,
                                  source_offset, message_key, message_value)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::text[],
                          $7::text[])
     ON CONFLICT (payment_id) DO NOTHING`,
    values: [
      column((event) => event.paymentId),
      column((event) => event.eventId),
      column((event) => event.source.topic),
      column((event) => event.source.partition),
      column((event) => event.source.offset),
      column((event) => event.source.key),
      column((event) => event.source.value),
    ],
  });
}
