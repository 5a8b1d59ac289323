import type { Queryable } from '../platform/database/db.js';
import type { TraceContext } from './trace-context.js';

/**
 * The one writer of `outbox` rows. Every resource writes its events through it, inside its own
 * statement or transaction (I2: an event is committed with the change it announces, or not at
 * all): `insertOutboxEvents` runs one multi-row INSERT on the caller's client, and
 * `outboxInsertCte` gives callers that keep their write one statement (POST /payments, the
 * refund's create) the same INSERT as a data-modifying CTE. The relay (the rest of src/outbox/)
 * reads what they write. insertOutboxEvents takes a companion: rows a feature writes with the
 * events in the same statement (the webhook fan-out); it knows no feature itself.
 */

/** The columns an event row is written with; the relay's columns keep their defaults. */
const OUTBOX_COLUMNS =
  'event_id, event_type, aggregate_id, topic, data, created_at, traceparent, tracestate';

/**
 * The merchant's copy of every event (migration 0036, DESIGN 129): what GET /events lists for
 * EVENT_RETENTION_DAYS after the outbox row is gone. Written by the same statement as the outbox
 * row, from the same values, so an event is listed exactly when it was committed. ON CONFLICT:
 * an id the outbox accepts again after purging its row is already listed, and stays as it was.
 */
const LISTED_COLUMNS =
  'event_id, merchant_id, event_type, subject, data, created_at, traceparent, tracestate';

/** One event to write: the relay publishes it to `topic`, keyed by `aggregateId`. */
export interface OutboxEvent {
  /** The event's UUIDv5 (src/events/event-types.ts): every copy published carries it. */
  eventId: string;
  type: string;
  /** The Kafka key and ordering unit: the payment id (a refund's events too). */
  aggregateId: string;
  topic: string;
  /** The CloudEvents `data`, as JSON text. */
  data: string;
  createdAt: Date;
  /** The span the event continues; nulls (or absent) when tracing is off. */
  trace?: TraceContext;
  /** The merchant whose payment or refund it is: whose webhook endpoints receive it. */
  merchantId: string;
}

/**
 * Rows a caller writes in the same statement as its events, derived from them (a feature's
 * part of the statement: the webhook fan-out, src/webhooks/webhook-fanout.ts): an event and its
 * companion rows are committed together or not at all. The statement text is fixed per
 * companion, so it is prepared once per connection under the companion's name.
 */
export interface EventCompanion {
  /** Names the prepared statement: one text per companion. */
  name: string;
  /** A per-event value the companion's CTEs read as `body` (null: nothing for this event). */
  body(event: OutboxEvent): string | null;
  /**
   * Data-modifying CTEs over `from`, an earlier CTE with one row per event written (its
   * columns: event_id, event_type, aggregate_id, created_at, merchant_id, body, ord).
   */
  ctes(from: string): string;
  /** The CTE of `ctes` the statement ends with (`SELECT count(*) FROM it`). */
  last: string;
}

const EVENT_ROWS = `written_events AS (
       SELECT *
         FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::jsonb[],
                     $6::timestamptz[], $7::text[], $8::text[], $9::uuid[], $10::text[])
              WITH ORDINALITY
              AS e(event_id, event_type, aggregate_id, topic, data, created_at, traceparent,
                   tracestate, merchant_id, body, ord)
     ),
     outbox_rows AS (
       INSERT INTO outbox (${OUTBOX_COLUMNS})
       SELECT ${OUTBOX_COLUMNS} FROM written_events ORDER BY ord
     ),
     listed_rows AS (
       INSERT INTO merchant_events (${LISTED_COLUMNS})
       SELECT event_id, merchant_id, event_type, aggregate_id, data, created_at, traceparent,
              tracestate
         FROM written_events ORDER BY ord
       ON CONFLICT (event_id) DO NOTHING
     )`;

/**
 * The events (one row each, `ord` their order), the outbox INSERT and the companion's CTEs over
 * the same rows, as ONE statement. The INSERT returns nothing: a writer's login may insert into
 * `outbox` without reading it. The outbox INSERT comes first, so it is within the first
 * kilobyte pg_stat_activity keeps of a statement's text.
 */
const statements = new Map<string, string>();
function insertEventsSql(companion: EventCompanion | undefined): string {
  const key = companion?.name ?? '';
  let text = statements.get(key);
  if (text === undefined) {
    text =
      companion === undefined
        ? `WITH ${EVENT_ROWS} SELECT count(*) FROM written_events`
        : `WITH ${EVENT_ROWS},\n     ${companion.ctes('written_events')}\n     SELECT count(*) FROM ${companion.last}`;
    statements.set(key, text);
  }
  return text;
}

/**
 * Writes `events` in ONE statement (one row each, in order) on `db`: the caller's transaction
 * client, so the events commit with the change they announce, and with their `companion`'s
 * rows. The statement holds `INSERT INTO outbox (` (the kill tests find a commit stuck behind an
 * outbox lock by it).
 */
export async function insertOutboxEvents(
  db: Queryable,
  events: readonly OutboxEvent[],
  companion?: EventCompanion,
): Promise<void> {
  if (events.length === 0) return;
  const column = <T>(pick: (event: OutboxEvent) => T): T[] => events.map(pick);
  // Named: prepared once per connection.
  await db.query({
    name:
      companion === undefined ? 'outbox.insert-events' : `outbox.insert-events.${companion.name}`,
    text: insertEventsSql(companion),
    values: [
      column((event) => event.eventId),
      column((event) => event.type),
      column((event) => event.aggregateId),
      column((event) => event.topic),
      column((event) => event.data),
      column((event) => event.createdAt),
      column((event) => event.trace?.traceparent ?? null),
      column((event) => event.trace?.tracestate ?? null),
      column((event) => event.merchantId),
      column((event) => companion?.body(event) ?? null),
    ],
  });
}

/** SQL expressions (placeholders, columns of `from`, literals) for each column of one row. */
export type OutboxRowSql = Record<
  | 'merchantId'
  | 'eventId'
  | 'type'
  | 'aggregateId'
  | 'topic'
  | 'data'
  | 'createdAt'
  | 'traceparent'
  | 'tracestate',
  string
>;

/**
 * `name AS (INSERT INTO outbox ... RETURNING aggregate_id)`: the event insert as a CTE of the
 * caller's one statement, followed by `name_listed`, the merchant's copy (LISTED_COLUMNS) from
 * the same expressions (Postgres runs a data-modifying CTE whether or not it is read). With
 * `from` (an earlier CTE of that statement) one row per row of it is written, so an event exists
 * only if the change it announces was written; without, exactly one row.
 */
export function outboxInsertCte(name: string, row: OutboxRowSql, from?: string): string {
  const source = from === undefined ? '' : ` FROM ${from}`;
  const outboxValues = [
    row.eventId,
    row.type,
    row.aggregateId,
    row.topic,
    row.data,
    row.createdAt,
    row.traceparent,
    row.tracestate,
  ].join(', ');
  const listedValues = [
    row.eventId,
    row.merchantId,
    row.type,
    row.aggregateId,
    row.data,
    row.createdAt,
    row.traceparent,
    row.tracestate,
  ].join(', ');
  return `${name} AS (
       INSERT INTO outbox (${OUTBOX_COLUMNS})
       SELECT ${outboxValues}${source}
       RETURNING aggregate_id
     ), ${name}_listed AS (
       INSERT INTO merchant_events (${LISTED_COLUMNS})
       SELECT ${listedValues}${source}
       ON CONFLICT (event_id) DO NOTHING
     )`;
}
