import type { TestDatabase } from './isolation.js';
import { eventually } from './settlement-harness.js';

/** A refund's status plus what the simulator and the outbox saw for it. */
export async function refundWorkFacts(db: TestDatabase, refundId: string) {
  const { rows } = await db.pool.query<{
    status: string;
    failure_code: string | null;
    amount_refunded: string;
    acquirer_refunds: number;
    approved_refunds: number;
    calls: number;
    replayed_calls: number;
    result_events: number;
    job_state: string | null;
  }>(
    `SELECT r.status, r.failure_code, p.amount_refunded,
            (SELECT count(*)::int FROM acquirer_simulator_refunds a WHERE a.refund_id = r.id) AS acquirer_refunds,
            (SELECT count(*)::int FROM acquirer_simulator_refunds a
              WHERE a.refund_id = r.id AND a.result = 'approved') AS approved_refunds,
            (SELECT count(*)::int FROM acquirer_simulator_refund_calls c WHERE c.refund_id = r.id) AS calls,
            (SELECT count(*)::int FROM acquirer_simulator_refund_calls c
              WHERE c.refund_id = r.id AND c.replayed) AS replayed_calls,
            (SELECT count(*)::int FROM outbox o
              WHERE o.aggregate_id = r.payment_id AND o.data->>'id' = r.id::text
                AND o.event_type IN ('refund.succeeded', 'refund.failed')) AS result_events,
            (SELECT state FROM refund_jobs j WHERE j.refund_id = r.id) AS job_state
       FROM refunds r JOIN payments p ON p.id = r.payment_id WHERE r.id = $1`,
    [refundId],
  );
  const row = rows[0];
  if (!row) throw new Error(`no refund ${refundId}`);
  return { ...row, amount_refunded: Number(row.amount_refunded) };
}

/** Waits until the refund has left `pending` (worked by a running settlement role); its facts. */
export function refundWorked(db: TestDatabase, refundId: string, label: string) {
  return eventually(label, async () => {
    const facts = await refundWorkFacts(db, refundId);
    return facts.status === 'pending' ? undefined : facts;
  });
}
