import { randomBytes } from 'node:crypto';
import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import { createChargeBatcher } from './charge-batcher.js';
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
export function createAcquirerSimulator(pool: Pool, options: SimulatorOptions): Required<Acquirer> {
  const random = options.random ?? Math.random;
  const chargeFirst = createChargeBatcher(pool);

  async function decide(
    request: ChargeRequest,
  ): Promise<{ result: CallResult; answer?: ChargeResult }> {
    // One roll per call: the transient failure rate strikes before anything else is decided.
    const struck = options.transientFailureRate > 0 && random() < options.transientFailureRate;
    const direct = struck ? null : directResult(request);
    if (direct !== null) {
      const answered = await chargeOnce(request, direct);
      if (answered) return answered;
    }
    return decideLocked(request, struck);
  }

  /**
   * The answer without reading the key's history: approved or declined by the token alone
   * (tok_visa, tok_decline, any other token). Null when the history matters (tok_transient_N
   * counts earlier failures) or the call fails whatever it is (tok_timeout, tok_unavailable).
   */
  function directResult(request: ChargeRequest): 'approved' | 'declined' | null {
    if (['tok_timeout', 'tok_unavailable'].includes(request.source)) return null;
    if (/^tok_transient_/.test(request.source)) return null;
    return request.source === 'tok_decline' ? 'declined' : 'approved';
  }

  /**
   * The common call, written with the others of the same event-loop turn in one statement
   * (charge-batcher.ts; its own transaction): the charge is inserted unless the key has one
   * (the primary key decides, so two concurrent calls cannot both charge: the second waits for
   * the first to commit and then inserts nothing), and the call is logged with it. Undefined
   * when the key was already charged: the locked path answers that replay.
   */
  async function chargeOnce(
    request: ChargeRequest,
    result: 'approved' | 'declined',
  ): Promise<{ result: CallResult; answer: ChargeResult } | undefined> {
    const reference = `sim_${randomBytes(8).toString('hex')}`;
    if (!(await chargeFirst({ request, result, reference }))) return undefined;
    return { result, answer: answerOf(result, reference) };
  }

  /** Any call, under the key's advisory lock: replays, tokens whose answer depends on history. */
  async function decideLocked(
    request: ChargeRequest,
    struck: boolean,
  ): Promise<{ result: CallResult; answer?: ChargeResult }> {
    return withTransaction(pool, async (client) => {
      await lockKey(client, request.idempotencyKey);
      const charged = await client.query<{ result: 'approved' | 'declined'; reference: string }>(
        'SELECT result, reference FROM acquirer_simulator_charges WHERE idempotency_key = $1',
        [request.idempotencyKey],
      );
      const previous = charged.rows[0];
      let result: CallResult;
      let answer: ChargeResult | undefined;
      if (previous) {
        result = previous.result;
        answer = answerOf(previous.result, previous.reference);
      } else {
        result = await fresh(client, request, struck);
        if (result === 'approved' || result === 'declined') {
          const reference = `sim_${randomBytes(8).toString('hex')}`;
          await client.query(
            `INSERT INTO acquirer_simulator_charges (idempotency_key, payment_id, result, reference)
             VALUES ($1, $2, $3, $4)`,
            [request.idempotencyKey, request.paymentId, result, reference],
          );
          answer = answerOf(result, reference);
        }
      }
      await client.query(
        `INSERT INTO acquirer_simulator_calls
           (idempotency_key, payment_id, source, amount, currency, result, replayed)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [...callColumns(request, result), previous !== undefined],
      );
      return answer ? { result, answer } : { result };
    });
  }

  /** The answer to a key never charged before, from its token and the failure rate. */
  async function fresh(
    client: { query: Pool['query'] },
    request: ChargeRequest,
    struck: boolean,
  ): Promise<CallResult> {
    if (request.source === 'tok_timeout') return 'timeout';
    if (request.source === 'tok_unavailable') return 'transient';
    if (struck) return 'transient';
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
        throw new AcquirerTransientError('acquirer did not answer', 'acquirer_timeout', 'unknown');
      }
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
    async inquireCharge(idempotencyKey, signal) {
      if (options.latencyMs > 0) await delay(options.latencyMs, signal);
      const { rows } = await pool.query<{ result: 'approved' | 'declined'; reference: string }>(
        'SELECT result, reference FROM acquirer_simulator_charges WHERE idempotency_key = $1',
        [idempotencyKey],
      );
      const charged = rows[0];
      return charged ? answerOf(charged.result, charged.reference) : null;
    },
  };
}

/**
 * Serializes the simulator's calls for one idempotency key until the transaction ends (charges
 * and refunds alike), so concurrent retries of one key cannot both be answered fresh.
 */
export async function lockKey(client: Queryable, idempotencyKey: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [idempotencyKey]);
}

/** What the acquirer answers for a recorded charge. */
function answerOf(result: 'approved' | 'declined', reference: string): ChargeResult {
  return result === 'approved'
    ? { outcome: 'approved', reference }
    : { outcome: 'declined', code: 'card_declined' };
}

/** A call-log row's first six columns: key, payment, source, amount, currency, result. */
function callColumns(request: ChargeRequest, result: CallResult): unknown[] {
  return [
    request.idempotencyKey,
    request.paymentId,
    request.source,
    request.amount,
    request.currency,
    result,
  ];
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function delay(ms: number, signal: AbortSignal): Promise<void> {
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
