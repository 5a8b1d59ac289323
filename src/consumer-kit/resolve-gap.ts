import type { PoolClient } from 'pg';
import { releaseAfter, runHandler, type ApplyOptions, type RecordPosition } from './apply-event.js';
import { checkOrder, type SubjectState } from './lifecycle-order.js';
import {
  DEFAULT_GAP_DECISION,
  type GapHandler,
  type GapReason,
  type OrderGap,
} from './order-gap.js';
import type { CloudEvent } from './parse-cloud-event.js';
import { inBoundedTransaction, timedQuery } from './timed-query.js';
import { withTimeout } from './with-timeout.js';

export type GapOutcome = 'applied' | 'skipped' | 'waiting' | 'released' | 'none';

export interface GapResult {
  outcome: GapOutcome;
  /** The gap reported to onGap, if one was. */
  gap: OrderGap | null;
  /** Parked events of the subject applied after the decision (now in order). */
  released: CloudEvent[];
}

interface ParkedRow {
  status: string;
  event: CloudEvent;
  order_problem: string;
  received_at: Date;
  position: RecordPosition | null;
}

/**
 * Decides one parked event in one transaction: locks its subject, checks that it is still
 * parked and still out of order (it may have been released meanwhile), reports the gap to
 * `onGap` (`reason` unless the event is late: then `superseded`) and carries out the decision.
 * `reason` null means: only a late event is reported now. Throws when anything fails (rolled
 * back; the sweep asks again).
 */
export async function resolveGap(
  options: ApplyOptions & { onGap: GapHandler | undefined },
  subject: string,
  eventId: string,
  reason: GapReason | null,
): Promise<GapResult> {
  const { pool, tables, timeoutMs } = options;
  return inBoundedTransaction(pool, timeoutMs, async (client) => {
    const locked = await timedQuery<{ state: SubjectState }>(
      client,
      timeoutMs,
      `SELECT state FROM ${tables.subjects} WHERE subject = $1 FOR UPDATE`,
      [subject],
    );
    const rows = await timedQuery<ParkedRow>(
      client,
      timeoutMs,
      `SELECT status, event, order_problem, received_at,
              CASE WHEN topic IS NULL THEN NULL ELSE json_build_object(
                'topic', topic, 'partition', kafka_partition, 'offset', kafka_offset::text) END
                AS position
       FROM ${tables.inbox} WHERE event_id = $1 FOR UPDATE`,
      [eventId],
    );
    const row = rows.rows[0];
    if (row?.status !== 'parked') return { outcome: 'none', gap: null, released: [] };
    return decide(options, client, locked.rows[0]?.state ?? {}, row, reason);
  });
}

async function decide(
  options: ApplyOptions & { onGap: GapHandler | undefined },
  client: PoolClient,
  state: SubjectState,
  row: ParkedRow,
  reason: GapReason | null,
): Promise<GapResult> {
  const { tables, timeoutMs } = options;
  const { event, position } = row;
  const verdict = checkOrder(state, event);
  const apply = async (applied: CloudEvent, gap: OrderGap | null, decision: string | null) => {
    const orderProblem = gap === null ? null : gap.problem;
    await runHandler(options, applied, { client, position, orderProblem, released: true, gap });
    await timedQuery(
      client,
      timeoutMs,
      `UPDATE ${tables.inbox} SET status = 'applied', event = NULL, applied_at = now(),
              gap_decision = $2, gap_reported_at = CASE WHEN $2::text IS NULL
                THEN gap_reported_at ELSE now() END
       WHERE event_id = $1`,
      [event.id, decision],
    );
    return releaseAfter(options, client, event, verdict.next);
  };
  if (verdict.inOrder) {
    return {
      outcome: 'released',
      gap: null,
      released: [event, ...(await apply(event, null, null))],
    };
  }
  const gapReason = verdict.missing === null ? 'superseded' : reason;
  if (gapReason === null) return { outcome: 'none', gap: null, released: [] };
  const gap: OrderGap = {
    event,
    problem: verdict.problem,
    missing: verdict.missing,
    reason: gapReason,
    parkedAt: new Date(row.received_at),
    position,
  };
  const decision = options.onGap
    ? await withTimeout(
        Promise.resolve(options.onGap(gap, { client })),
        timeoutMs,
        `onGap of event ${event.id}`,
      )
    : DEFAULT_GAP_DECISION;
  // A caller in plain JavaScript may return anything: an unknown answer decides nothing.
  if (!['apply', 'skip', 'wait'].includes((decision as { action?: unknown }).action as string)) {
    throw new Error(`onGap of event ${event.id} returned no decision (apply, skip or wait)`);
  }
  if (decision.action === 'apply') {
    const replaced = decision.data !== undefined;
    const applied = replaced ? { ...event, data: decision.data } : event;
    const released = await apply(applied, gap, replaced ? 'applied_with_data' : 'applied');
    return { outcome: 'applied', gap, released };
  }
  await timedQuery(
    client,
    timeoutMs,
    `UPDATE ${tables.inbox} SET status = $2, gap_decision = $3, gap_reported_at = now()
     WHERE event_id = $1`,
    [event.id, decision.action === 'skip' ? 'skipped' : 'parked', decision.action],
  );
  return { outcome: decision.action === 'skip' ? 'skipped' : 'waiting', gap, released: [] };
}
