import { randomBytes } from 'node:crypto';
import type { Pool } from '../platform/db.js';
import {
  AcquirerTransientError,
  type Acquirer,
  type ChargeRequest,
  type ChargeResult,
} from './acquirer.js';

export interface SimulatorOptions {
  /** Added to every call, for load tests. */
  latencyMs: number;
  /** Probability (0-1) that a call fails transiently before anything else is decided. */
  transientFailureRate: number;
  /** How long `tok_timeout` stays silent: longer than any sane call timeout. */
  timeoutTokenDelayMs: number;
  random?: () => number;
}

type CallResult = 'approved' | 'declined' | 'transient' | 'timeout';

/**
 * The acquirer simulator of BRIEF section 6, with durable books in its own tables so a test can
 * count charges per payment across crashes and restarts. Behaviour by `source`:
 * tok_visa approves; tok_decline declines (card_declined); tok_transient_N fails transiently on
 * its first N calls for a key, then approves; tok_unavailable always fails transiently;
 * tok_timeout never answers within the caller's timeout.
 *
 * Idempotent like a real acquirer: a key that was already approved or declined gets the stored
 * answer again (logged as a replayed call) and is never charged twice. Calls for one key are
 * serialized with an advisory lock, so concurrent retries cannot both charge.
 */
export function createAcquirerSimulator(pool: Pool, options: SimulatorOptions): Acquirer {
  const random = options.random ?? Math.random;

  async function decide(
    request: ChargeRequest,
  ): Promise<{ result: CallResult; answer?: ChargeResult }> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        request.idempotencyKey,
      ]);
      const charged = await client.query<{ result: 'approved' | 'declined'; reference: string }>(
        'SELECT result, reference FROM acquirer_simulator_charges WHERE idempotency_key = $1',
        [request.idempotencyKey],
      );
      const previous = charged.rows[0];
      let result: CallResult;
      let answer: ChargeResult | undefined;
      if (previous) {
        result = previous.result;
        answer =
          previous.result === 'approved'
            ? { outcome: 'approved', reference: previous.reference }
            : { outcome: 'declined', code: 'card_declined' };
      } else {
        result = await fresh(client, request);
        if (result === 'approved' || result === 'declined') {
          const reference = `sim_${randomBytes(8).toString('hex')}`;
          await client.query(
            `INSERT INTO acquirer_simulator_charges (idempotency_key, payment_id, result, reference)
             VALUES ($1, $2, $3, $4)`,
            [request.idempotencyKey, request.paymentId, result, reference],
          );
          answer =
            result === 'approved'
              ? { outcome: 'approved', reference }
              : { outcome: 'declined', code: 'card_declined' };
        }
      }
      await client.query(
        `INSERT INTO acquirer_simulator_calls
           (idempotency_key, payment_id, source, amount, currency, result, replayed)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          request.idempotencyKey,
          request.paymentId,
          request.source,
          request.amount,
          request.currency,
          result,
          previous !== undefined,
        ],
      );
      await client.query('COMMIT');
      return answer ? { result, answer } : { result };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** The answer to a key never charged before, from its token and the failure rate. */
  async function fresh(
    client: { query: Pool['query'] },
    request: ChargeRequest,
  ): Promise<CallResult> {
    if (request.source === 'tok_timeout') return 'timeout';
    if (request.source === 'tok_unavailable') return 'transient';
    if (random() < options.transientFailureRate) return 'transient';
    const transient = /^tok_transient_([1-9])$/.exec(request.source);
    if (transient) {
      const failures = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM acquirer_simulator_calls
          WHERE idempotency_key = $1 AND result = 'transient'`,
        [request.idempotencyKey],
      );
      if ((failures.rows[0]?.n ?? 0) < Number(transient[1])) return 'transient';
    }
    return request.source === 'tok_decline' ? 'declined' : 'approved';
  }

  return {
    async charge(request, signal) {
      if (options.latencyMs > 0) await delay(options.latencyMs, signal);
      const { result, answer } = await decide(request);
      if (result === 'timeout') {
        await delay(options.timeoutTokenDelayMs, signal);
        throw new AcquirerTransientError('acquirer did not answer', 'acquirer_timeout');
      }
      if (!answer) {
        throw new AcquirerTransientError(
          'acquirer temporarily unavailable',
          'acquirer_unavailable',
        );
      }
      return answer;
    },
  };
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}
