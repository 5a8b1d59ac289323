import type { Queryable } from '../../src/platform/database/db.js';
import { scopeCte, scopeParameters, type VerifyScope } from './verify-scope.js';

/** Approved operations of one kind on one payment's hold, by the books and by the calls. */
export interface HoldOperationCount {
  /** Rows of acquirer_simulator_hold_operations answered `approved` (one per idempotency key). */
  approved: number;
  /** Calls answered `approved` without replaying a stored answer: operations carried out. */
  freshApprovedCalls: number;
}

/**
 * What the payment's row, the hold tables (payment_hold_decisions, hold_jobs) and the acquirer
 * simulator's two-step books (acquirer_simulator_holds, _hold_operations, _hold_calls) say
 * about one manual payment (capture_method manual, issue 40).
 */
export interface HoldFacts {
  amount: number;
  amountCaptured: number | null;
  amountRefunded: number;
  /** Sum of the payment's refunds that are not failed. */
  refundsSum: number;
  /** Seconds since capture_before (negative before it), by the database clock; null if unset. */
  pastCaptureBeforeSeconds: number | null;
  /** The acquirer's hold, null when it holds none for the payment. */
  hold: {
    state: 'held' | 'captured' | 'voided';
    authorized: number;
    captured: number;
    released: number;
  } | null;
  authorize: HoldOperationCount;
  capture: HoldOperationCount;
  void: HoldOperationCount;
  decision: 'capture' | 'cancel' | null;
  holdJobState: 'pending' | 'dead' | null;
}

type Operation = 'authorize' | 'capture' | 'void';

/**
 * Loads the hold facts of every manual payment in scope with one query, keyed by payment id
 * (automatic payments are absent: their checks are the charges'). Each table is aggregated per
 * payment once and hash-joined, as loadPaymentFacts does.
 */
export async function loadHoldFacts(
  db: Queryable,
  scope: VerifyScope,
): Promise<Map<string, HoldFacts>> {
  const { rows } = await db.query<{
    id: string;
    amount: string;
    amount_captured: string | null;
    amount_refunded: string;
    refunds_sum: string | null;
    past_capture_before_s: number | null;
    hold_state: 'held' | 'captured' | 'voided' | null;
    authorized: string | null;
    captured: string | null;
    released: string | null;
    ops: Partial<Record<Operation, number>> | null;
    fresh: Partial<Record<Operation, number>> | null;
    decision: 'capture' | 'cancel' | null;
    job_state: 'pending' | 'dead' | null;
  }>(
    `WITH ${scopeCte()},
     manual AS (SELECT * FROM scope WHERE capture_method = 'manual'),
     ops AS (
       SELECT o.payment_id, jsonb_object_agg(o.operation, o.n) AS counts
         FROM (SELECT o.payment_id, o.operation, count(*)::int AS n
                 FROM acquirer_simulator_hold_operations o JOIN manual m ON m.id = o.payment_id
                WHERE o.result = 'approved' GROUP BY o.payment_id, o.operation) o
        GROUP BY o.payment_id),
     fresh AS (
       SELECT c.payment_id, jsonb_object_agg(c.operation, c.n) AS counts
         FROM (SELECT c.payment_id, c.operation, count(*)::int AS n
                 FROM acquirer_simulator_hold_calls c JOIN manual m ON m.id = c.payment_id
                WHERE c.result = 'approved' AND NOT c.replayed
                GROUP BY c.payment_id, c.operation) c
        GROUP BY c.payment_id),
     refunded AS (
       SELECT r.payment_id, sum(r.amount) AS total
         FROM refunds r JOIN manual m ON m.id = r.payment_id
        WHERE r.status <> 'failed' GROUP BY r.payment_id)
     SELECT m.id, m.amount, m.amount_captured, m.amount_refunded, refunded.total AS refunds_sum,
            extract(epoch FROM now() - m.capture_before)::float8 AS past_capture_before_s,
            h.state AS hold_state, h.amount_authorized AS authorized,
            h.amount_captured AS captured, h.amount_released AS released,
            ops.counts AS ops, fresh.counts AS fresh, d.action AS decision, j.state AS job_state
       FROM manual m
       LEFT JOIN acquirer_simulator_holds h ON h.payment_id = m.id
       LEFT JOIN ops ON ops.payment_id = m.id
       LEFT JOIN fresh ON fresh.payment_id = m.id
       LEFT JOIN refunded ON refunded.payment_id = m.id
       LEFT JOIN payment_hold_decisions d ON d.payment_id = m.id
       LEFT JOIN hold_jobs j ON j.payment_id = m.id`,
    scopeParameters(scope),
  );
  const count = (row: (typeof rows)[number], operation: Operation): HoldOperationCount => ({
    approved: row.ops?.[operation] ?? 0,
    freshApprovedCalls: row.fresh?.[operation] ?? 0,
  });
  return new Map(
    rows.map((row) => [
      row.id,
      {
        amount: Number(row.amount),
        amountCaptured: row.amount_captured === null ? null : Number(row.amount_captured),
        amountRefunded: Number(row.amount_refunded),
        refundsSum: Number(row.refunds_sum ?? 0),
        pastCaptureBeforeSeconds: row.past_capture_before_s,
        hold:
          row.hold_state === null
            ? null
            : {
                state: row.hold_state,
                authorized: Number(row.authorized),
                captured: Number(row.captured),
                released: Number(row.released),
              },
        authorize: count(row, 'authorize'),
        capture: count(row, 'capture'),
        void: count(row, 'void'),
        decision: row.decision,
        holdJobState: row.job_state,
      },
    ]),
  );
}
