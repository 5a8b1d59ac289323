import { refundEventId } from '../../src/refunds/refund-event-id.js';
import type { Queryable } from '../../src/platform/database/db.js';
import type { EventLog } from './event-log.js';
import type { Violation, ViolationCode } from './violation.js';
import { scopeCte, scopeParameters, type VerifyScope } from './verify-scope.js';

interface RefundFact {
  id: string;
  payment_id: string;
  status: 'pending' | 'succeeded' | 'failed';
  age_s: number;
  updated_age_s: number;
  job_state: 'pending' | 'dead' | null;
  approved: number;
  declined: number;
  fresh_approved: number;
}

interface PaymentRefundFact {
  id: string;
  amount: string;
  amount_refunded: string;
  refunded_sum: string;
}

export interface RefundReport {
  total: number;
  pending: number;
  succeeded: number;
  failed: number;
  deadLettered: number;
  inFlight: number;
}

/**
 * The refund invariants (DESIGN.md Part VI) over the payments in scope: refunds not failed never
 * add up to more than the payment (and `amount_refunded` is their sum), at most one successful
 * acquirer refund per refund and a status that agrees with it, every refund terminal or
 * dead-lettered after the grace period, and, when the topics were read, its `refund.created`
 * and exactly one matching result event, keyed by the payment id.
 */
export async function verifyRefunds(
  db: Queryable,
  scope: VerifyScope,
  topics: { events: EventLog; deadLetters: ReadonlyMap<string, number> } | null,
  graceSeconds: number,
): Promise<{ report: RefundReport; violations: Violation[] }> {
  const params = scopeParameters(scope);
  const payments = await db.query<PaymentRefundFact>(
    `WITH ${scopeCte()}
     SELECT s.id, s.amount, s.amount_refunded,
            (SELECT coalesce(sum(r.amount), 0) FROM refunds r
              WHERE r.payment_id = s.id AND r.status <> 'failed') AS refunded_sum
       FROM scope s WHERE EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = s.id)
          OR s.amount_refunded <> 0`,
    params,
  );
  const refunds = await db.query<RefundFact>(
    `WITH ${scopeCte()}
     SELECT r.id, r.payment_id, r.status,
            extract(epoch FROM now() - r.created_at)::float8 AS age_s,
            extract(epoch FROM now() - r.updated_at)::float8 AS updated_age_s,
            (SELECT state FROM refund_jobs j WHERE j.refund_id = r.id) AS job_state,
            (SELECT count(*)::int FROM acquirer_simulator_refunds a
              WHERE a.refund_id = r.id AND a.result = 'approved') AS approved,
            (SELECT count(*)::int FROM acquirer_simulator_refunds a
              WHERE a.refund_id = r.id AND a.result = 'declined') AS declined,
            (SELECT count(*)::int FROM acquirer_simulator_refund_calls c
              WHERE c.refund_id = r.id AND c.result = 'approved' AND NOT c.replayed) AS fresh_approved
       FROM refunds r JOIN scope s ON s.id = r.payment_id`,
    params,
  );

  const violations: Violation[] = [];
  const flag = (code: ViolationCode, paymentId: string, detail: string) => {
    violations.push({ code, paymentId, detail });
  };
  for (const p of payments.rows) {
    const [amount, refunded, sum] = [p.amount, p.amount_refunded, p.refunded_sum].map(Number);
    if ((sum ?? 0) > (amount ?? 0))
      flag('refunds_exceed_payment', p.id, `refunds ${sum} > amount ${amount}`);
    if (refunded !== sum)
      flag('amount_refunded_mismatch', p.id, `amount_refunded ${refunded}, refunds ${sum}`);
  }

  const report: RefundReport = {
    total: 0,
    pending: 0,
    succeeded: 0,
    failed: 0,
    deadLettered: 0,
    inFlight: 0,
  };
  for (const r of refunds.rows) {
    report.total++;
    report[r.status]++;
    const detail = (text: string) => `refund ${r.id}: ${text}`;
    const young = r.age_s <= graceSeconds;
    const books = `${r.approved} approved, ${r.declined} declined, ${r.fresh_approved} fresh approving calls`;
    if (r.approved > 1 || r.fresh_approved > 1)
      flag('duplicate_acquirer_refund', r.payment_id, detail(books));
    if (
      (r.status === 'succeeded' && r.approved !== 1) ||
      (r.status === 'failed' && r.declined !== 1) ||
      (r.status === 'pending' && r.declined > 0)
    )
      flag('refund_outcome_mismatch', r.payment_id, detail(`status ${r.status}; ${books}`));

    const createdId = refundEventId(r.id, 'refund.created');
    if (r.status === 'pending') {
      if (r.job_state === null) flag('refund_job_mismatch', r.payment_id, detail('no job'));
      else if (r.job_state === 'pending') {
        if (young) report.inFlight++;
        else flag('unresolved_refund', r.payment_id, detail(`pending ${Math.round(r.age_s)} s`));
      } else if (topics && (topics.deadLetters.get(createdId) ?? 0) === 0) {
        flag('refund_dead_letter_missing', r.payment_id, detail(`no dead letter ${createdId}`));
      } else report.deadLettered++;
    } else if (r.job_state !== null) {
      flag('refund_job_mismatch', r.payment_id, detail(`${r.status} with a ${r.job_state} job`));
    }

    if (topics) {
      const copies = (id: string) => topics.events.refunds.get(id);
      const created = copies(createdId);
      const succeeded = copies(refundEventId(r.id, 'refund.succeeded'));
      const failed = copies(refundEventId(r.id, 'refund.failed'));
      const recent = r.updated_age_s <= graceSeconds;
      if (!created && !young)
        flag('refund_event_missing', r.payment_id, detail('no refund.created'));
      const own = r.status === 'succeeded' ? succeeded : r.status === 'failed' ? failed : undefined;
      if (r.status !== 'pending' && !own && !recent)
        flag('refund_event_missing', r.payment_id, detail(`no refund.${r.status}`));
      if ((succeeded && failed) || (r.status === 'pending' && (succeeded || failed)))
        flag('refund_result_events', r.payment_id, detail(`status ${r.status}`));
      for (const seen of [created, succeeded, failed])
        for (const key of seen?.paymentIds ?? [])
          if (key !== r.payment_id) flag('refund_event_key', r.payment_id, detail(`key ${key}`));
    }
  }
  return { report, violations };
}
