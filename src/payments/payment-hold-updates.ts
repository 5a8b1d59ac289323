import { keyRecordExists, keyRecordInsertCte } from '../idempotency/idempotency-repository.js';
import type { StoredResponse } from '../idempotency/stored-response.js';
import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import {
  AmountExceedsAuthorization,
  CaptureMethodAutomatic,
  PaymentAlreadyCanceled,
  PaymentAlreadyCaptured,
  PaymentAuthorizationPending,
  PaymentNotCapturable,
  PaymentNotFound,
} from './payment-hold-errors.js';
import {
  PAYMENT_RESOURCE_COLUMNS,
  toPaymentResource,
  type PaymentRow,
} from './payment-resource.js';

/**
 * The writes of a manual payment's second step (issue 40, DESIGN 132): the decision on its
 * authorization (capture or cancel, at most one: payment_hold_decisions' primary key), taken
 * under the payment's row lock by the API or, at capture_before, by the expiry; and the result
 * the hold job records once the acquirer answered. Settlement's hold job makes the call.
 */

/** What a capture or cancel decides: the amount to take, or the reason to release. */
export type HoldDecision =
  { action: 'capture'; amount: number | null } | { action: 'cancel'; reason: string | null };

export interface HoldRequest {
  merchantId: string;
  idempotencyKey: string;
  fingerprint: Buffer;
  ttlSeconds: number;
  paymentId: string;
  decision: HoldDecision;
  createdAt: Date;
}

type LockedPayment = PaymentRow & {
  amount_refunded: string;
  decided: 'capture' | 'cancel' | null;
  expired: boolean;
};

/** The merchant's payment, locked, with the decision already taken on it and its expiry. */
const LOCK_SQL = `SELECT ${PAYMENT_RESOURCE_COLUMNS}, p.amount_refunded, d.action AS decided,
         coalesce(p.capture_before <= now(), false) AS expired
    FROM payments p LEFT JOIN payment_hold_decisions d ON d.payment_id = p.id
   WHERE p.id = $1 AND p.merchant_id = $2
     FOR UPDATE OF p`;

/**
 * The decision, the key's record (idempotency's part) and the hold job made due now, in one
 * statement; `jobs` 0 means the authorization had no job (a bug: the caller rolls back). No row
 * when a decision was there first: the caller rolls back and refuses with its code. (The lock
 * statement's snapshot predates the lock: a decision committed while it waited for the row, by
 * another request or by the expiry, which does not take the row lock, is not in its join.)
 */
const DECIDE_SQL = `WITH decision AS (
    INSERT INTO payment_hold_decisions (payment_id, action, amount, cancellation_reason, created_at)
    VALUES ($1, $2, $3, $4, $5::timestamptz)
    ON CONFLICT (payment_id) DO NOTHING
    RETURNING payment_id
  ), job AS (
    UPDATE hold_jobs SET next_attempt_at = now() WHERE payment_id = $1 RETURNING payment_id
  ), ${keyRecordInsertCte(
    'record',
    {
      merchantId: '$6',
      key: '$7',
      fingerprint: '$8',
      paymentId: '$1',
      status: '202',
      body: '$9::text',
      createdAt: '$5::timestamptz',
      ttlSeconds: '$10',
    },
    { ifKeyFree: false },
  )}
  SELECT record.expires_at, (SELECT count(*)::int FROM job) AS jobs FROM record, decision`;

/** Why `payment` cannot take `decision` (the contract's codes), or null when it can. */
function refusal(payment: LockedPayment, decision: HoldDecision): Error | null {
  if (payment.capture_method !== 'manual') return new CaptureMethodAutomatic();
  if (payment.status === 'canceled') return new PaymentAlreadyCanceled();
  if (payment.status === 'settled') return new PaymentAlreadyCaptured();
  if (payment.status === 'pending' || payment.status === 'processing') {
    return new PaymentAuthorizationPending();
  }
  if (payment.status !== 'requires_capture') return new PaymentNotCapturable(payment.status);
  // A decision taken already (the winner of a race, or an earlier request with another key).
  if (payment.decided === 'capture') return new PaymentAlreadyCaptured();
  if (payment.decided === 'cancel') return new PaymentAlreadyCanceled();
  if (payment.expired) {
    return new PaymentAlreadyCanceled('The authorization expired; it is being voided.');
  }
  if (decision.action === 'capture' && (decision.amount ?? 0) > Number(payment.amount)) {
    return new AmountExceedsAuthorization(decision.amount ?? 0, Number(payment.amount));
  }
  return null;
}

/**
 * ONE transaction: the payment locked (a capture and a cancel of one payment, from any replica,
 * take turns on it), the key checked, the payment's state checked, then the decision, the key's
 * record and the job's due time written in one statement. Exactly one decision per payment: the
 * loser of a race sees the winner's and is refused with its state's code. Null when the key has
 * a record (the caller replays it); a refusal throws and writes nothing.
 */
export async function decideHold(pool: Pool, request: HoldRequest): Promise<StoredResponse | null> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<LockedPayment>(LOCK_SQL, [
      request.paymentId,
      request.merchantId,
    ]);
    if (await keyRecordExists(client, request.merchantId, request.idempotencyKey)) return null;
    const payment = rows[0];
    if (!payment) throw new PaymentNotFound(request.paymentId);
    const refused = refusal(payment, request.decision);
    if (refused) throw refused;
    const { decision } = request;
    const body = JSON.stringify(toPaymentResource(payment));
    const written = await client.query<{ expires_at: Date; jobs: number }>(DECIDE_SQL, [
      request.paymentId,
      decision.action,
      decision.action === 'capture' ? (decision.amount ?? Number(payment.amount)) : null,
      decision.action === 'cancel' ? decision.reason : null,
      request.createdAt,
      request.merchantId,
      request.idempotencyKey,
      request.fingerprint,
      body,
      request.ttlSeconds,
    ]);
    const row = written.rows[0];
    if (!row) throw await decidedFirst(client, request.paymentId);
    if (row.jobs !== 1) throw new Error(`payment ${request.paymentId} has no hold job`);
    return {
      paymentId: request.paymentId,
      fingerprint: request.fingerprint.toString('hex'),
      status: 202,
      body,
      expiresAt: row.expires_at,
    };
  });
}

/** The refusal for a decision that was taken first (read now: a fresh snapshot). */
async function decidedFirst(db: Queryable, paymentId: string): Promise<Error> {
  const { rows } = await db.query<{ action: string; cancellation_reason: string | null }>(
    'SELECT action, cancellation_reason FROM payment_hold_decisions WHERE payment_id = $1',
    [paymentId],
  );
  const first = rows[0];
  if (first?.action === 'capture') return new PaymentAlreadyCaptured();
  return first?.cancellation_reason === 'expired'
    ? new PaymentAlreadyCanceled('The authorization expired; it is being voided.')
    : new PaymentAlreadyCanceled();
}

/** A decision as the hold job reads it. */
export interface StoredDecision {
  action: 'capture' | 'cancel';
  amount: string | null;
  cancellation_reason: string | null;
}

/**
 * The expiry's decision (the hold job found none at capture_before): cancel, reason `expired`,
 * only while the payment is requires_capture and its window has passed (Postgres' clock, as the
 * API's check). A decision the API committed first wins (the primary key); returns the decision
 * in force, or null when there is none (not expired yet, or no longer requires_capture).
 */
export async function decideExpiry(
  db: Queryable,
  paymentId: string,
): Promise<StoredDecision | null> {
  await db.query(
    `INSERT INTO payment_hold_decisions (payment_id, action, cancellation_reason)
     SELECT p.id, 'cancel', 'expired' FROM payments p
      WHERE p.id = $1 AND p.status = 'requires_capture' AND p.capture_before <= now()
     ON CONFLICT (payment_id) DO NOTHING`,
    [paymentId],
  );
  const { rows } = await db.query<StoredDecision>(
    `SELECT action, amount, cancellation_reason FROM payment_hold_decisions WHERE payment_id = $1`,
    [paymentId],
  );
  return rows[0] ?? null;
}

/** SQL expressions of holdResultCte (scalars: one payment). */
export interface HoldResultSql {
  id: string;
  status: string;
  amountCaptured: string;
  failureCode: string;
  reason: string;
  at: string;
}

/**
 * `name AS (UPDATE payments ... RETURNING <resource columns>, merchant_id)`: requires_capture ->
 * settled (amount_captured) | canceled (canceled_at, reason) | failed (failure_code), only where
 * still requires_capture and the payment is in `fence` (the hold job this claim still owns).
 */
export function holdResultCte(
  name: string,
  values: HoldResultSql,
  fence: { from: string; id: string },
): string {
  return `${name} AS (
    UPDATE payments p
       SET status = ${values.status}::text, amount_captured = ${values.amountCaptured}::bigint,
           failure_code = ${values.failureCode}::text,
           canceled_at = CASE WHEN ${values.status}::text = 'canceled' THEN ${values.at}::timestamptz END,
           cancellation_reason = ${values.reason}::text, updated_at = ${values.at}::timestamptz
      FROM ${fence.from}
     WHERE p.id = ${values.id}::uuid AND ${fence.from}.${fence.id} = p.id
       AND p.status = 'requires_capture'
    RETURNING ${PAYMENT_RESOURCE_COLUMNS}, p.merchant_id)`;
}
