import { randomUUID } from 'node:crypto';
import { sql, type Queryable } from '../platform/database/db.js';
import type { OutboxEvent } from './cloud-event.js';

/**
 * Every statement of the relay is one autocommit statement: the claim is its own short
 * transaction (rows are leased, not held locked while Kafka is called), and so is each mark.
 * Every write after the claim names the claim's owner token: a relay whose lease ran out and
 * whose rows another relay claimed since changes nothing (see DESIGN.md record 38).
 */

/** An outbox row leased to this relay until its lease ends. */
export interface ClaimedEvent extends OutboxEvent {
  id: string;
  topic: string;
  /** Failed attempts before this one. */
  attempts: number;
}

/** One claim: the rows it leased and the token that proves the lease is still this claim's. */
export interface Claim {
  /** A random UUID per claim, stored in lease_owner; later writes match on it. */
  owner: string;
  events: ClaimedEvent[];
}

/** An outbox row as the relay's claim (and the tools' readers) select it. */
export interface ClaimedRow {
  id: string;
  event_id: string;
  event_type: string;
  aggregate_id: string;
  topic: string;
  data: unknown;
  created_at: Date;
  attempts: number;
  traceparent: string | null;
  tracestate: string | null;
}

/**
 * Leases up to `limit` publishable rows, oldest first: pending (not published, not parked),
 * not leased by anyone (or the lease ran out), and the oldest pending row of their payment.
 * That last condition keeps one payment's events in order across any number of relays: a
 * payment's next event becomes claimable only once the one before it was published (or parked).
 * SKIP LOCKED lets concurrent claims pass over each other's rows instead of queueing.
 *
 * `id = ANY (ARRAY (...))` rather than a join or IN: the chosen ids become one array, and the
 * UPDATE finds them through the primary key. As a join, the planner hashed the subquery and
 * scanned the whole table for it (every published row of the retention window, every claim).
 *
 * The head test is a NOT EXISTS with OFFSET 0 on purpose: the OFFSET keeps Postgres from
 * turning it into an anti-join, so it stays one probe of `outbox_pending (aggregate_id, id)`
 * per candidate, and the claim costs O(batch), not O(backlog). As an anti-join the planner,
 * misled by a fresh table's missing statistics, scanned every pending row per candidate (seen:
 * 150 ms per claim over a 5,000-row backlog). The probe's index choice still relies on
 * statistics, which autovacuum keeps (see DESIGN.md, "Outbox relay").
 */
export async function claimEvents(db: Queryable, limit: number, leaseMs: number): Promise<Claim> {
  const owner = randomUUID();
  const { rows } = await db.query<ClaimedRow>({
    // Named (prepared once per connection) like every statement the pipeline runs per batch:
    // parsing and planning them on each call was a fifth of Postgres's time (DESIGN 58).
    name: 'outbox.claim-events',
    text: sql`
      UPDATE outbox o
         SET locked_until = now() + $2 * interval '1 millisecond', lease_owner = $3
       WHERE o.id = ANY (ARRAY (
               SELECT c.id
                 FROM outbox c
                WHERE c.published_at IS NULL
                  AND c.parked_at IS NULL
                  AND (c.locked_until IS NULL OR c.locked_until <= now())
                  AND NOT EXISTS (
                        SELECT 1
                          FROM outbox older
                         WHERE older.aggregate_id = c.aggregate_id
                           AND older.id < c.id
                           AND older.published_at IS NULL
                           AND older.parked_at IS NULL
                        OFFSET 0)
                ORDER BY c.id
                LIMIT $1
                  FOR UPDATE SKIP LOCKED))
      RETURNING o.id, o.event_id, o.event_type, o.aggregate_id, o.topic, o.data, o.created_at,
                o.attempts, o.traceparent, o.tracestate`,
    values: [limit, leaseMs, owner],
  });
  return { owner, events: rows.map(toClaimedEvent).sort((a, b) => compareIds(a.id, b.id)) };
}

export function toClaimedEvent(row: ClaimedRow): ClaimedEvent {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    aggregateId: row.aggregate_id,
    topic: row.topic,
    data: row.data,
    createdAt: row.created_at,
    attempts: row.attempts,
    traceparent: row.traceparent,
    tracestate: row.tracestate,
  };
}

/** bigint ids arrive as strings; order them numerically. */
function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * Marks rows published once the broker acknowledged them, if `owner` still holds their lease;
 * the first mark wins. Returns how many rows it marked.
 */
export async function markPublished(
  db: Queryable,
  owner: string,
  ids: readonly string[],
): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await db.query({
    name: 'outbox.mark-published',
    text: sql`
      UPDATE outbox
         SET published_at = now(), locked_until = NULL, lease_owner = NULL
       WHERE id = ANY($1::bigint[]) AND lease_owner = $2 AND published_at IS NULL`,
    values: [ids, owner],
  });
  return rowCount ?? 0;
}

/**
 * Gives leases back without counting an attempt: the rows were never refused, Kafka was
 * unreachable. `reason` is kept in last_error so an operator sees why rows wait. Only rows
 * `owner` still holds; returns how many it released.
 */
export async function releaseEvents(
  db: Queryable,
  owner: string,
  ids: readonly string[],
  reason: string,
): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await db.query(
    sql`
      UPDATE outbox
         SET locked_until = NULL, lease_owner = NULL, last_error = left($2, 1000)
       WHERE id = ANY($1::bigint[]) AND lease_owner = $3 AND published_at IS NULL`,
    [ids, reason, owner],
  );
  return rowCount ?? 0;
}

/**
 * Records a refused publish: one more attempt and the error; the row is parked when it reached
 * `maxAttempts`, otherwise leased for `retryInMs` so it is retried later (and, being the oldest
 * pending row of its payment, holds that payment's later events back until then). Only if
 * `owner` still holds the lease: `counted` is false when the row was not touched.
 */
export async function recordFailedAttempt(
  db: Queryable,
  owner: string,
  id: string,
  error: string,
  maxAttempts: number,
  retryInMs: number,
): Promise<{ counted: boolean; parked: boolean }> {
  const { rows } = await db.query<{ parked: boolean }>(
    sql`
      UPDATE outbox
         SET attempts = attempts + 1,
             last_error = left($2, 1000),
             parked_at = CASE WHEN attempts + 1 >= $3 THEN now() END,
             locked_until = CASE WHEN attempts + 1 >= $3 THEN NULL
                                 ELSE now() + $4 * interval '1 millisecond' END,
             lease_owner = CASE WHEN attempts + 1 >= $3 THEN NULL ELSE lease_owner END
       WHERE id = $1 AND lease_owner = $5 AND published_at IS NULL
      RETURNING parked_at IS NOT NULL AS parked`,
    [id, error, maxAttempts, retryInMs, owner],
  );
  const row = rows[0];
  return { counted: row !== undefined, parked: row?.parked ?? false };
}

/**
 * Deletes at most `limit` rows published more than `retentionSeconds` ago, oldest first.
 * SKIP LOCKED: several relays purging at once split the work instead of waiting on each other.
 * `= ANY (ARRAY (...))` for the same reason as in claimEvents: primary-key lookups, no scan.
 */
export async function purgePublished(
  db: Queryable,
  retentionSeconds: number,
  limit: number,
): Promise<number> {
  const { rowCount } = await db.query(
    sql`
      DELETE FROM outbox
       WHERE id = ANY (ARRAY (
               SELECT id
                 FROM outbox
                WHERE published_at < now() - $1 * interval '1 second'
                ORDER BY published_at
                LIMIT $2
                  FOR UPDATE SKIP LOCKED))`,
    [retentionSeconds, limit],
  );
  return rowCount ?? 0;
}

export interface OutboxBacklog {
  /** Rows not published and not parked. */
  pending: number;
  /** Seconds since the oldest pending row was created; 0 when nothing is pending. */
  oldestPendingSeconds: number;
  parked: number;
}

/** What the metrics report; reads only the partial indexes of pending and parked rows. */
export async function readBacklog(db: Queryable): Promise<OutboxBacklog> {
  const { rows } = await db.query<{
    pending: number;
    oldest_pending_seconds: number | null;
    parked: number;
  }>(
    sql`
      SELECT (SELECT count(*)::int FROM outbox
               WHERE published_at IS NULL AND parked_at IS NULL) AS pending,
             (SELECT extract(epoch FROM now() - min(created_at))::float8 FROM outbox
               WHERE published_at IS NULL AND parked_at IS NULL) AS oldest_pending_seconds,
             (SELECT count(*)::int FROM outbox WHERE parked_at IS NOT NULL) AS parked`,
  );
  const row = rows[0];
  return {
    pending: row?.pending ?? 0,
    oldestPendingSeconds: Math.max(0, row?.oldest_pending_seconds ?? 0),
    parked: row?.parked ?? 0,
  };
}
