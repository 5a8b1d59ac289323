import { randomBytes } from 'node:crypto';
import { withTransaction, type Pool } from '../platform/database/db.js';
import {
  AcquirerTransientError,
  type RefundAcquirer,
  type RefundRequest,
  type RefundResult,
} from './acquirer.js';
import { lockKey } from './acquirer-simulator.js';

type RefundCallResult = 'approved' | 'declined' | 'transient';

/**
 * The simulator's refunds, with its own books (acquirer_simulator_refunds, one row per key, and
 * every call in acquirer_simulator_refund_calls). Behaviour by the payment's source:
 * tok_refund_decline declines (refund_declined); tok_refund_transient_N fails transiently on
 * the first N calls for a key, then approves; tok_refund_unavailable always fails transiently;
 * any other source approves. A key already answered gets the stored answer (a replayed call),
 * never a second refund; calls for one key are serialized with an advisory lock.
 */
export function createRefundSimulator(pool: Pool): Required<RefundAcquirer> {
  async function decide(request: RefundRequest): Promise<RefundResult | null> {
    return withTransaction(pool, async (client) => {
      await lockKey(client, request.idempotencyKey);
      const done = await client.query<{ result: 'approved' | 'declined'; reference: string }>(
        'SELECT result, reference FROM acquirer_simulator_refunds WHERE idempotency_key = $1',
        [request.idempotencyKey],
      );
      const previous = done.rows[0];
      let result: RefundCallResult;
      let reference = previous?.reference ?? `simr_${randomBytes(8).toString('hex')}`;
      if (previous) {
        result = previous.result;
        reference = previous.reference;
      } else {
        result = await fresh(client, request);
        if (result !== 'transient') {
          await client.query(
            `INSERT INTO acquirer_simulator_refunds
               (idempotency_key, payment_id, refund_id, amount, result, reference)
             VALUES ($1, $2, $3, $4, $5, $6)`,
            [
              request.idempotencyKey,
              request.paymentId,
              request.refundId,
              request.amount,
              result,
              reference,
            ],
          );
        }
      }
      await client.query(
        `INSERT INTO acquirer_simulator_refund_calls (idempotency_key, refund_id, result, replayed)
         VALUES ($1, $2, $3, $4)`,
        [request.idempotencyKey, request.refundId, result, previous !== undefined],
      );
      if (result === 'transient') return null;
      return result === 'approved'
        ? { outcome: 'approved', reference }
        : { outcome: 'declined', code: 'refund_declined' };
    });
  }

  async function fresh(
    client: { query: Pool['query'] },
    request: RefundRequest,
  ): Promise<RefundCallResult> {
    if (request.source === 'tok_refund_unavailable') return 'transient';
    if (request.source === 'tok_refund_decline') return 'declined';
    const transient = /^tok_refund_transient_([1-9])$/.exec(request.source);
    if (transient) {
      const failures = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM acquirer_simulator_refund_calls
          WHERE idempotency_key = $1 AND result = 'transient'`,
        [request.idempotencyKey],
      );
      if ((failures.rows[0]?.n ?? 0) < Number(transient[1])) return 'transient';
    }
    return 'approved';
  }

  return {
    async refund(request, signal) {
      signal.throwIfAborted();
      const answer = await decide(request);
      if (!answer) {
        // Answered (processed: true on the wire): not `acquirer_unavailable`, which names a call
        // that never reached the acquirer (DESIGN 112).
        throw new AcquirerTransientError(
          'acquirer answered a transient error',
          'acquirer_transient',
        );
      }
      return answer;
    },
    async inquireRefund(idempotencyKey, signal) {
      signal.throwIfAborted();
      const { rows } = await pool.query<{ result: 'approved' | 'declined'; reference: string }>(
        'SELECT result, reference FROM acquirer_simulator_refunds WHERE idempotency_key = $1',
        [idempotencyKey],
      );
      const done = rows[0];
      if (!done) return null;
      return done.result === 'approved'
        ? { outcome: 'approved', reference: done.reference }
        : { outcome: 'declined', code: 'refund_declined' };
    },
  };
}
