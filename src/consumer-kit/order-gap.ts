import type { PoolClient } from 'pg';
import type { CloudEvent } from './parse-cloud-event.js';

/**
 * Why the kit stopped waiting for a parked event's predecessor:
 * - `waited`: it was parked for the consumer's `gapAfterMs`;
 * - `before_retention`: the kit read every retained record of the partition before the event
 *   and is caught up, so the predecessor (same key, hence same partition, earlier offset) is
 *   older than the topic's earliest retained offset, or was never on the topic;
 * - `superseded`: the payment reached a later stage already; nothing can put the event in order.
 */
export type GapReason = 'waited' | 'before_retention' | 'superseded';

/** A parked event whose predecessor is not coming: what onGap is asked to decide about. */
export interface OrderGap {
  event: CloudEvent;
  /** The order problem, e.g. `payment.settled before payment.created`. */
  problem: string;
  /** The event type that must come first (e.g. `payment.created`); null when `superseded`. */
  missing: string | null;
  reason: GapReason;
  parkedAt: Date;
  /** Where the event was read (a RecordPosition), null when applied without Kafka. */
  position: { topic: string; partition: number; offset: string } | null;
}

/**
 * The consumer's decision: `apply` runs the handler on the event (with `data` instead of the
 * event's when given: e.g. the payment as GET /payments/{id} returns it now), `skip` records it
 * as `skipped` and never applies it, `wait` keeps it parked and asks again after `gapAfterMs`.
 */
export type GapDecision =
  { action: 'apply'; data?: unknown } | { action: 'skip' } | { action: 'wait' };

/** Runs in the kit's transaction (context.client), bounded by timeoutMs like the handler. */
export type GapHandler = (
  gap: OrderGap,
  context: { client: PoolClient },
) => GapDecision | Promise<GapDecision>;

/** Without an onGap, the kit applies the event: its data is the payment at that event's time. */
export const DEFAULT_GAP_DECISION: GapDecision = { action: 'apply' };
