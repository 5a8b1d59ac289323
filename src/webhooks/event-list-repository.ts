import { toKafkaRecord } from '../outbox/cloud-event.js';
import type { Queryable } from '../platform/database/db.js';

/**
 * Reads a merchant's copies of its events (merchant_events, written by the outbox writer with
 * each outbox row; DESIGN 129), each as its CloudEvent JSON: the very bytes the relay publishes
 * and webhooks send (toKafkaRecord over the same columns). Only events of the last
 * `retentionSeconds` are visible, whether or not the reaper has deleted the older ones yet.
 */

interface MerchantEventRow {
  event_id: string;
  event_type: string;
  subject: string;
  data: unknown;
  created_at: Date;
  traceparent: string | null;
  tracestate: string | null;
}

const COLUMNS = 'event_id, event_type, subject, data, created_at, traceparent, tracestate';

function cloudEventJson(row: MerchantEventRow): string {
  return toKafkaRecord({
    eventId: row.event_id,
    eventType: row.event_type,
    aggregateId: row.subject,
    data: row.data,
    createdAt: row.created_at,
    traceparent: row.traceparent,
    tracestate: row.tracestate,
  }).value;
}

/** A merchant's event as CloudEvent JSON, or null: another merchant's is indistinguishable from none. */
export async function findEvent(
  db: Queryable,
  merchantId: string,
  eventId: string,
  retentionSeconds: number,
): Promise<string | null> {
  const { rows } = await db.query<MerchantEventRow>({
    name: 'events.find',
    text: `SELECT ${COLUMNS} FROM merchant_events
            WHERE event_id = $1 AND merchant_id = $2
              AND created_at >= now() - make_interval(secs => $3::float8)`,
    values: [eventId, merchantId, retentionSeconds],
  });
  const row = rows[0];
  return row ? cloudEventJson(row) : null;
}

export interface EventFilter {
  limit: number;
  startingAfter?: string;
  type?: string;
  createdGte?: string;
  createdLt?: string;
}

export type EventPage =
  { kind: 'page'; events: string[]; hasMore: boolean } | { kind: 'unknown_cursor' };

/**
 * Newest first, keyset pagination on (created_at, event_id) as GET /payments: stable under
 * concurrent inserts, each page one range scan of (merchant_id[, event_type], created_at DESC,
 * event_id DESC). The cursor must be one of the merchant's visible events (any type: a page of
 * one type may start after the id a page of all types ended with). Fetches limit + 1 to learn
 * has_more.
 */
export async function listEvents(
  db: Queryable,
  merchantId: string,
  filter: EventFilter,
  retentionSeconds: number,
): Promise<EventPage> {
  let cursor: { created_at: Date | string; event_id: string } = {
    created_at: 'infinity',
    event_id: 'ffffffff-ffff-ffff-ffff-ffffffffffff',
  };
  if (filter.startingAfter !== undefined) {
    const found = await db.query<{ created_at: Date; event_id: string }>({
      name: 'events.cursor',
      text: `SELECT created_at, event_id FROM merchant_events
              WHERE event_id = $1 AND merchant_id = $2
                AND created_at >= now() - make_interval(secs => $3::float8)`,
      values: [filter.startingAfter, merchantId, retentionSeconds],
    });
    if (!found.rows[0]) return { kind: 'unknown_cursor' };
    cursor = found.rows[0];
  }
  // Two texts, each prepared once: with `type`, `event_type = $8` makes the range scan the
  // (merchant_id, event_type, ...) index's; a `$8 IS NULL OR ...` in one text would leave a
  // generic plan on the merchant's index, filtering a rare type out of all its events.
  // Absent time bounds are the infinities, which the range scan reads as no bound.
  const values: unknown[] = [
    merchantId,
    cursor.created_at,
    cursor.event_id,
    retentionSeconds,
    filter.createdGte ?? '-infinity',
    filter.createdLt ?? 'infinity',
    filter.limit + 1,
  ];
  const typed = filter.type !== undefined;
  if (typed) values.push(filter.type);
  const { rows } = await db.query<MerchantEventRow>({
    name: typed ? 'events.list-type' : 'events.list',
    text: `SELECT ${COLUMNS} FROM merchant_events
            WHERE merchant_id = $1${typed ? ' AND event_type = $8' : ''}
              AND (created_at, event_id) < ($2::timestamptz, $3::uuid)
              AND created_at >= now() - make_interval(secs => $4::float8)
              AND created_at >= $5::timestamptz
              AND created_at < $6::timestamptz
            ORDER BY created_at DESC, event_id DESC
            LIMIT $7`,
    values,
  });
  return {
    kind: 'page',
    events: rows.slice(0, filter.limit).map(cloudEventJson),
    hasMore: rows.length > filter.limit,
  };
}
