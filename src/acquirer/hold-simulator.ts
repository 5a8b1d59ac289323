import { withTransaction, type Pool, type Queryable } from '../platform/database/db.js';
import { AcquirerTransientError } from './acquirer.js';
import { delay, lockKey, type SimulatorOptions } from './acquirer-simulator.js';
import type { HoldAcquirer, HoldResult } from './hold-acquirer.js';
import {
  decideHoldCall,
  storedHoldAnswer,
  type HoldCall,
  type HoldOperation,
} from './hold-books.js';

type CallResult = 'approved' | 'declined' | 'transient' | 'timeout';

/**
 * The simulator's two-step operations (issue 40, DESIGN 128): authorize places a hold, capture
 * takes all or part of it (the rest released), void releases it, with books per payment and a
 * stored answer per idempotency key (hold-books.ts has the rules and decline codes). Test tokens
 * by the payment's source: `tok_decline` declines the authorization, `tok_capture_decline`
 * authorizes but declines the capture; as for charges, `tok_transient_N` fails transiently on
 * the first N calls of each key, `tok_unavailable` always, `tok_timeout` never answers in time,
 * and the random transient rate strikes before anything is decided.
 *
 * A key already answered gets the stored answer (a replayed call), never a second operation.
 * Every call of a payment takes that payment's advisory lock, then its key's, for its whole
 * transaction: concurrent captures and voids of one hold are decided one after the other, so
 * exactly one of them decides it and the others are declined with the state it left.
 */
export function createHoldSimulator(pool: Pool, options: SimulatorOptions): Required<HoldAcquirer> {
  const random = options.random ?? Math.random;

  async function call(request: HoldCall, signal: AbortSignal): Promise<HoldResult> {
    if (options.latencyMs > 0) await delay(options.latencyMs, signal);
    signal.throwIfAborted();
    const struck = options.transientFailureRate > 0 && random() < options.transientFailureRate;
    const { result, answer } = await decide(request, struck);
    if (result === 'timeout') {
      await delay(options.timeoutTokenDelayMs, signal);
      throw new AcquirerTransientError('acquirer did not answer', 'acquirer_timeout', 'unknown');
    }
    if (!answer) {
      // Answered (processed: true on the wire), as for charges (DESIGN 112).
      throw new AcquirerTransientError('acquirer answered a transient error', 'acquirer_transient');
    }
    return answer;
  }

  function decide(
    request: HoldCall,
    struck: boolean,
  ): Promise<{ result: CallResult; answer?: HoldResult }> {
    return withTransaction(pool, async (client) => {
      // Payment first, then key, in every call: no two calls wait for each other in a circle.
      await lockKey(client, `hold:${request.paymentId}`);
      await lockKey(client, request.idempotencyKey);
      const previous = await storedHoldAnswer(client, request.idempotencyKey);
      let result: CallResult;
      let answer: HoldResult | undefined;
      if (previous) {
        answer = previous;
        result = previous.outcome;
      } else {
        const failure = await failureOf(client, request, struck);
        if (failure) {
          result = failure;
        } else {
          answer = await decideHoldCall(client, request);
          result = answer.outcome;
        }
      }
      await client.query(
        `INSERT INTO acquirer_simulator_hold_calls
           (idempotency_key, payment_id, operation, source, amount, result, code, replayed)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          request.idempotencyKey,
          request.paymentId,
          request.operation,
          request.source,
          request.amount,
          result,
          answer?.outcome === 'declined' ? answer.code : null,
          previous !== null,
        ],
      );
      return answer ? { result, answer } : { result };
    });
  }

  /** A fresh call that fails whatever the books say: by its token or the failure rate. */
  async function failureOf(
    client: Queryable,
    request: HoldCall,
    struck: boolean,
  ): Promise<'transient' | 'timeout' | null> {
    if (request.source === 'tok_timeout') return 'timeout';
    if (request.source === 'tok_unavailable' || struck) return 'transient';
    const transient = /^tok_transient_([1-9])$/.exec(request.source);
    if (!transient) return null;
    const failures = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM acquirer_simulator_hold_calls
        WHERE idempotency_key = $1 AND result = 'transient'`,
      [request.idempotencyKey],
    );
    return (failures.rows[0]?.n ?? 0) < Number(transient[1]) ? 'transient' : null;
  }

  async function inquire(
    operation: HoldOperation,
    idempotencyKey: string,
    signal: AbortSignal,
  ): Promise<HoldResult | null> {
    if (options.latencyMs > 0) await delay(options.latencyMs, signal);
    signal.throwIfAborted();
    return storedHoldAnswer(pool, idempotencyKey, operation);
  }

  return {
    authorize: (request, signal) => call({ operation: 'authorize', ...request }, signal),
    capture: (request, signal) => call({ operation: 'capture', ...request }, signal),
    void: (request, signal) =>
      call({ operation: 'void', ...request, amount: null, currency: null }, signal),
    inquireAuthorization: (key, signal) => inquire('authorize', key, signal),
    inquireCapture: (key, signal) => inquire('capture', key, signal),
    inquireVoid: (key, signal) => inquire('void', key, signal),
  };
}
