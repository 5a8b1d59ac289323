import { withTransaction, type Pool, type PoolClient } from '../platform/database/db.js';
import type { SourceRecord } from '../jobs/dead-letters/dead-letter.js';
import { claimedOnInsert, claimOnInsertSql, type IntakeClaim } from '../jobs/claim-on-insert.js';
import { reviveDeadJobs } from '../jobs/job-store.js';
import { SETTLEMENT_JOBS } from '../jobs/job-table.js';
import { moveToProcessing } from '../payments/payment-updates.js';
import type { SettlementJob } from './settlement-job-store.js';

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
export async function recordCreatedEvents(
  pool: Pool,
  events: readonly CreatedEvent[],
): Promise<RecordOutcome[]> {
  return (await recordAndClaimCreatedEvents(pool, events, null)).outcomes;
}

/**
 * recordCreatedEvents, and with `claim` the first `claim.slots` new jobs claimed by the same
 * statement that records them (claim-on-insert.ts): returned as settlement jobs for the worker
 * to adopt after the commit, instead of a claim statement of its own.
 */
export function recordAndClaimCreatedEvents(
  pool: Pool,
  events: readonly CreatedEvent[],
  claim: IntakeClaim | null,
): Promise<{ outcomes: RecordOutcome[]; claimed: SettlementJob[] }> {
  if (events.length === 0) return Promise.resolve({ outcomes: [], claimed: [] });
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
    const claimedIds = await insertJobs(
      client,
      freshEvents.filter((event) => moved.has(event.paymentId)),
      claim,
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
    const claimed = claim
      ? freshEvents.flatMap((event) => {
          const payment = known.get(event.paymentId);
          if (!claimedIds.delete(event.paymentId) || !payment) return [];
          return [toClaimedJob(event, payment, claim)];
        })
      : [];
    const outcomes = events.map((event): RecordOutcome => {
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
    return { outcomes, claimed };
  });
}

/** What the worker needs of a payment it settles (the claim's join, settlement-repository). */
interface KnownPayment {
  amount: string;
  currency: string;
  source: string;
  capture_method: string;
  created_at: Date;
}

function toClaimedJob(
  event: CreatedEvent,
  payment: KnownPayment,
  claim: IntakeClaim,
): SettlementJob {
  return {
    ...claimedOnInsert(event.paymentId, claim),
    paymentId: event.paymentId,
    eventId: event.eventId,
    amount: Number(payment.amount),
    currency: payment.currency,
    source: payment.source,
    manual: payment.capture_method === 'manual',
    paymentCreatedAt: payment.created_at,
    record: event.source,
  };
}

async function knownPayments(
  client: PoolClient,
  events: readonly CreatedEvent[],
): Promise<Map<string, KnownPayment>> {
  const { rows } = await client.query<KnownPayment & { id: string }>({
    name: 'intake.known-payments',
    text: `SELECT id, amount, currency, source, capture_method, created_at
             FROM payments WHERE id = ANY($1::uuid[])`,
    values: [[...new Set(events.map((event) => event.paymentId))]],
  });
  return new Map(rows.map((row) => [row.id, row]));
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

/** The jobs' insert: the first $8 rows claimed under owner $10 for $9 ms (claim-on-insert). */
const CLAIM_ON_INSERT = claimOnInsertSql('j.n', '$8::int', '$9', '$10');

/**
 * One durable job per moved payment, with the record it came from (for a dead letter); the
 * first `claim.slots` of them claimed. Returns the ids of the jobs claimed.
 */
async function insertJobs(
  client: PoolClient,
  events: readonly CreatedEvent[],
  claim: IntakeClaim | null,
): Promise<Set<string>> {
  const onePerPayment = [...new Map(events.map((event) => [event.paymentId, event])).values()];
  if (onePerPayment.length === 0) return new Set();
  const column = <T>(pick: (event: CreatedEvent) => T) => onePerPayment.map(pick);
  const { rows } = await client.query<{ payment_id: string; claimed: boolean }>({
    name: 'intake.insert-jobs',
    text: `INSERT INTO settlement_jobs (payment_id, event_id, source_topic, source_partition,
                                  source_offset, message_key, message_value,
                                  ${CLAIM_ON_INSERT.columns})
     SELECT j.payment_id, j.event_id, j.topic, j.partition, j.record_offset, j.key, j.value,
            ${CLAIM_ON_INSERT.values}
       FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::text[],
                   $7::text[]) WITH ORDINALITY
            AS j(payment_id, event_id, topic, partition, record_offset, key, value, n)
     ON CONFLICT (payment_id) DO NOTHING
     RETURNING payment_id, lease_owner IS NOT NULL AS claimed`,
    values: [
      column((event) => event.paymentId),
      column((event) => event.eventId),
      column((event) => event.source.topic),
      column((event) => event.source.partition),
      column((event) => event.source.offset),
      column((event) => event.source.key),
      column((event) => event.source.value),
      claim?.slots ?? 0,
      claim?.leaseMs ?? 0,
      claim?.owner ?? null,
    ],
  });
  return new Set(rows.filter((row) => row.claimed).map((row) => row.payment_id));
}
