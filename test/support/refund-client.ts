import type { TestDatabase } from './isolation.js';
import { postPayment, type Answer, type TestApi } from './test-api.js';

/** POST /payments/{id}/refunds as a client would send it. */
export async function postRefund(
  api: TestApi,
  options: {
    apiKey: string;
    paymentId: string;
    key?: string;
    body?: unknown;
    /** Sent as is instead of `body` (bodies JSON.stringify cannot produce). */
    rawBody?: string;
    headers?: Record<string, string>;
  },
): Promise<Answer> {
  const res = await fetch(api.url(`/payments/${options.paymentId}/refunds`), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${options.apiKey}`,
      'idempotency-key': options.key ?? crypto.randomUUID(),
      'content-type': 'application/json',
      ...options.headers,
    },
    body: options.rawBody ?? JSON.stringify(options.body ?? {}),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON; callers assert on text
  }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * A payment created through the API and marked settled directly (what settlement would do),
 * so refund tests need no acquirer round trip for the charge.
 */
export async function settledPayment(
  api: TestApi,
  db: TestDatabase,
  apiKey: string,
  options: { amount?: number; source?: string } = {},
): Promise<string> {
  const res = await postPayment(api, {
    apiKey,
    body: { amount: options.amount ?? 1000, currency: 'EUR', source: options.source ?? 'tok_visa' },
  });
  if (res.status !== 202) throw new Error(`payment not created: ${res.status} ${res.text}`);
  const id = res.json.id as string;
  await db.pool.query(`UPDATE payments SET status = 'settled' WHERE id = $1`, [id]);
  return id;
}

/** The database's view of a payment's refunds, for invariant assertions. */
export async function refundFacts(
  db: TestDatabase,
  paymentId: string,
): Promise<{ amount: number; amount_refunded: number; refunds: number; refunded_sum: number }> {
  const { rows } = await db.pool.query<{
    amount: string;
    amount_refunded: string;
    refunds: number;
    refunded_sum: string;
  }>(
    `SELECT p.amount, p.amount_refunded,
            (SELECT count(*)::int FROM refunds r WHERE r.payment_id = p.id) AS refunds,
            (SELECT coalesce(sum(amount), 0) FROM refunds r
              WHERE r.payment_id = p.id AND r.status <> 'failed') AS refunded_sum
       FROM payments p WHERE p.id = $1`,
    [paymentId],
  );
  const row = rows[0];
  if (!row) throw new Error(`no payment ${paymentId}`);
  return {
    amount: Number(row.amount),
    amount_refunded: Number(row.amount_refunded),
    refunds: row.refunds,
    refunded_sum: Number(row.refunded_sum),
  };
}
