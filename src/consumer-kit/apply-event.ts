import type { Pool, PoolClient } from 'pg';
import type { InboxTables } from './inbox-schema.js';
import { checkOrder, type SubjectState } from './lifecycle-order.js';
import type { OrderGap } from './order-gap.js';
import type { CloudEvent } from './parse-cloud-event.js';
import { inBoundedTransaction, timedQuery } from './timed-query.js';
import { withTimeout } from './with-timeout.js';

/** What the kit does with an event that arrives out of its payment's lifecycle order. */
export type OutOfOrderPolicy = 'park' | 'refuse' | 'apply';

/** Where a record was read (null for none, e.g. an event applied by a test directly). */
export interface RecordPosition {
  topic: string;
  partition: number;
  offset: string;
}

/** What the handler gets besides the event: the transaction's client, and why it runs. */
export interface EventContext {
  /** The kit's transaction: write with it, and the write commits with the inbox row or not at all. */
  client: PoolClient;
  position: RecordPosition | null;
  /** Null when in order; the problem when applied anyway (policy 'apply'). */
  orderProblem: string | null;
  /** True when a parked event is applied now that the event before it arrived. */
  released: boolean;
  /**
   * Set when a parked event is applied because its predecessor never came and onGap chose
   * `apply` (README, "Gaps"): what is missing, and why the kit stopped waiting.
   */
  gap: OrderGap | null;
}

export type EventHandler = (event: CloudEvent, context: EventContext) => Promise<void>;

export interface ApplyOptions {
  pool: Pool;
  tables: InboxTables;
  handler: EventHandler;
  policy: OutOfOrderPolicy;
  /** Bounds connecting, each statement, each lock wait and each handler call. */
  timeoutMs: number;
}

export interface ApplyResult {
  outcome: 'applied' | 'duplicate' | 'parked' | 'refused';
  /** The order problem of this event, if it was out of order. */
  problem: string | null;
  /** Parked events of the same subject applied in this transaction, in the order applied. */
  released: CloudEvent[];
}

/**
 * Applies one event exactly once in effect, in one transaction of the consumer's database:
 * insert its id into the inbox (a duplicate is committed past untouched), lock its subject's
 * state, check the lifecycle order, run the handler on the same client (or park or refuse the
 * event), apply any parked events that are now in order, and commit. Throws when anything
 * fails (the transaction is then rolled back by destroying the connection): the caller must
 * not commit the record's offset, so the event comes again.
 */
export async function applyEvent(
  options: ApplyOptions,
  event: CloudEvent,
  position: RecordPosition | null,
): Promise<ApplyResult> {
  const { pool, tables, timeoutMs } = options;
  return inBoundedTransaction(pool, timeoutMs, async (client) => {
    const inserted = await timedQuery(
      client,
      timeoutMs,
      `INSERT INTO ${tables.inbox}
         (event_id, event_type, subject, status, topic, kafka_partition, kafka_offset, applied_at)
       VALUES ($1, $2, $3, 'applied', $4, $5, $6, now())
       ON CONFLICT (event_id) DO NOTHING`,
      [event.id, event.type, event.subject, position?.topic, position?.partition, position?.offset],
    );
    if (inserted.rowCount !== 1) return { outcome: 'duplicate', problem: null, released: [] };
    return applyNew(options, client, event, position);
  });
}

async function applyNew(
  options: ApplyOptions,
  client: PoolClient,
  event: CloudEvent,
  position: RecordPosition | null,
): Promise<ApplyResult> {
  const { tables, timeoutMs, policy } = options;
  await timedQuery(
    client,
    timeoutMs,
    `INSERT INTO ${tables.subjects} (subject) VALUES ($1) ON CONFLICT (subject) DO NOTHING`,
    [event.subject],
  );
  const locked = await timedQuery<{ state: SubjectState }>(
    client,
    timeoutMs,
    `SELECT state FROM ${tables.subjects} WHERE subject = $1 FOR UPDATE`,
    [event.subject],
  );
  const verdict = checkOrder(locked.rows[0]?.state ?? {}, event);
  const problem = verdict.inOrder ? null : verdict.problem;
  if (problem !== null && policy !== 'apply') {
    const outcome = policy === 'park' ? 'parked' : 'refused';
    await timedQuery(
      client,
      timeoutMs,
      `UPDATE ${tables.inbox} SET status = $2, order_problem = $3, event = $4, applied_at = NULL
       WHERE event_id = $1`,
      [event.id, outcome, problem, JSON.stringify(event)],
    );
    return { outcome, problem, released: [] };
  }
  const context = { client, position, orderProblem: problem, released: false, gap: null };
  await runHandler(options, event, context);
  if (problem !== null) {
    await timedQuery(
      client,
      timeoutMs,
      `UPDATE ${tables.inbox} SET order_problem = $2 WHERE event_id = $1`,
      [event.id, problem],
    );
  }
  const released = await releaseAfter(options, client, event, verdict.next);
  return { outcome: 'applied', problem, released };
}

/**
 * After `event` was applied and moved its subject to `from`: applies the parked events of the
 * subject that are now in order (policy 'park'), then saves the subject's state and last event.
 */
export async function releaseAfter(
  options: ApplyOptions,
  client: PoolClient,
  event: CloudEvent,
  from: SubjectState,
): Promise<CloudEvent[]> {
  let state = from;
  let last = event;
  const released: CloudEvent[] = [];
  if (options.policy === 'park') {
    for (const parked of await releasable(options, client, event.subject, state)) {
      released.push(parked.event);
      state = parked.next;
      last = parked.event;
    }
  }
  await timedQuery(
    client,
    options.timeoutMs,
    `UPDATE ${options.tables.subjects}
     SET state = $2, last_event_id = $3, last_event_type = $4, last_event_time = $5,
         updated_at = now()
     WHERE subject = $1`,
    [event.subject, JSON.stringify(state), last.id, last.type, validTime(last.time)],
  );
  return released;
}

/**
 * Applies the subject's parked events that the state now allows, repeatedly (one released
 * event can make the next one in order), oldest first. Returns each with the state after it.
 */
async function releasable(
  options: ApplyOptions,
  client: PoolClient,
  subject: string,
  from: SubjectState,
): Promise<{ event: CloudEvent; next: SubjectState }[]> {
  const { tables, timeoutMs } = options;
  const parked = await timedQuery<{ event: CloudEvent; position: RecordPosition | null }>(
    client,
    timeoutMs,
    `SELECT event,
            CASE WHEN topic IS NULL THEN NULL ELSE json_build_object(
              'topic', topic, 'partition', kafka_partition, 'offset', kafka_offset::text) END
              AS position
     FROM ${tables.inbox} WHERE subject = $1 AND status = 'parked'
     ORDER BY received_at, kafka_offset, event_id FOR UPDATE`,
    [subject],
  );
  const waiting = [...parked.rows];
  const applied: { event: CloudEvent; next: SubjectState }[] = [];
  let state = from;
  for (let progress = true; progress;) {
    progress = false;
    for (const [index, row] of waiting.entries()) {
      const verdict = checkOrder(state, row.event);
      if (!verdict.inOrder) continue;
      const context = {
        client,
        position: row.position,
        orderProblem: null,
        released: true,
        gap: null,
      };
      await runHandler(options, row.event, context);
      await timedQuery(
        client,
        timeoutMs,
        `UPDATE ${tables.inbox} SET status = 'applied', event = NULL, applied_at = now()
         WHERE event_id = $1`,
        [row.event.id],
      );
      waiting.splice(index, 1);
      applied.push({ event: row.event, next: verdict.next });
      state = verdict.next;
      progress = true;
      break;
    }
  }
  return applied;
}

export function runHandler(options: ApplyOptions, event: CloudEvent, context: EventContext) {
  return withTimeout(
    options.handler(event, context),
    options.timeoutMs,
    `the handler of event ${event.id}`,
  );
}

/** The event's time when it is a date, else null (the column is informative only). */
function validTime(time: string): string | null {
  return Number.isNaN(Date.parse(time)) ? null : time;
}
