import { randomBytes } from 'node:crypto';
import type { Queryable } from '../platform/database/db.js';
import { HOLD_DECLINE_CODES, type HoldResult } from './hold-acquirer.js';

export type HoldOperation = 'authorize' | 'capture' | 'void';

/** One call of the hold simulator as its books see it. */
export interface HoldCall {
  operation: HoldOperation;
  idempotencyKey: string;
  paymentId: string;
  source: string;
  /** The amount asked for (authorize, capture); null for a void. */
  amount: number | null;
  currency: string | null;
}

interface HoldRow {
  state: 'held' | 'captured' | 'voided';
  authorized: string;
  reference: string;
}

interface AnswerRow {
  result: 'approved' | 'declined';
  code: string | null;
  reference: string | null;
}

/**
 * The simulator's hold books (migration 0035, DESIGN 128): the fresh answer to a call whose key
 * has none yet, written with it (the hold placed or decided, the key's answer stored). The
 * caller holds the payment's and the key's advisory locks in the transaction of `client`, so
 * reading the hold and then writing it is one step for that payment.
 *
 * - authorize: `tok_decline` declines (card_declined); a payment already held keeps its one hold
 *   (the answer is its authorization, whatever the key); else the hold is placed.
 * - capture: no hold, a voided one, one already captured, more than the hold, and the test token
 *   `tok_capture_decline` are declined with their codes (the hold stays as it was); else the
 *   amount is captured and the rest released.
 * - void: no hold, or a captured or voided one, is declined; else the whole hold is released.
 */
export async function decideHoldCall(client: Queryable, call: HoldCall): Promise<HoldResult> {
  const hold = await holdOf(client, call.paymentId);
  switch (call.operation) {
    case 'authorize':
      return authorize(client, call, hold);
    case 'capture':
      return capture(client, call, hold);
    case 'void':
      return voidHold(client, call, hold);
  }
}

/** The answer stored for a key, or null when the books have none. */
export async function storedHoldAnswer(
  client: Queryable,
  idempotencyKey: string,
  operation?: HoldOperation,
): Promise<HoldResult | null> {
  const { rows } = await client.query<AnswerRow>(
    `SELECT result, code, reference FROM acquirer_simulator_hold_operations
      WHERE idempotency_key = $1 AND ($2::text IS NULL OR operation = $2)`,
    [idempotencyKey, operation ?? null],
  );
  const row = rows[0];
  if (!row) return null;
  return row.result === 'approved'
    ? { outcome: 'approved', reference: row.reference ?? '' }
    : { outcome: 'declined', code: row.code ?? '' };
}

async function holdOf(client: Queryable, paymentId: string): Promise<HoldRow | undefined> {
  const { rows } = await client.query<HoldRow>(
    `SELECT state, amount_authorized AS authorized, reference
       FROM acquirer_simulator_holds WHERE payment_id = $1`,
    [paymentId],
  );
  return rows[0];
}

async function authorize(
  client: Queryable,
  call: HoldCall,
  hold: HoldRow | undefined,
): Promise<HoldResult> {
  if (hold) return remember(client, call, { outcome: 'approved', reference: hold.reference });
  if (call.source === 'tok_decline') return declined(client, call, 'card_declined');
  const reference = newReference('sima');
  await client.query(
    `INSERT INTO acquirer_simulator_holds
       (payment_id, authorize_key, source, currency, amount_authorized, reference)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [call.paymentId, call.idempotencyKey, call.source, call.currency, call.amount, reference],
  );
  return remember(client, call, { outcome: 'approved', reference });
}

async function capture(
  client: Queryable,
  call: HoldCall,
  hold: HoldRow | undefined,
): Promise<HoldResult> {
  if (hold?.state !== 'held') return declined(client, call, refusal(hold));
  const amount = call.amount ?? 0;
  if (amount > Number(hold.authorized)) {
    return declined(client, call, HOLD_DECLINE_CODES.amountExceedsAuthorization);
  }
  if (call.source === 'tok_capture_decline') {
    return declined(client, call, HOLD_DECLINE_CODES.captureDeclined);
  }
  await decide(
    client,
    `state = 'captured', amount_captured = $2, amount_released = amount_authorized - $2`,
    [call.paymentId, amount],
  );
  return remember(client, call, { outcome: 'approved', reference: newReference('simc') });
}

async function voidHold(
  client: Queryable,
  call: HoldCall,
  hold: HoldRow | undefined,
): Promise<HoldResult> {
  if (hold?.state !== 'held') return declined(client, call, refusal(hold));
  await decide(client, `state = 'voided', amount_released = amount_authorized`, [call.paymentId]);
  return remember(client, call, { outcome: 'approved', reference: newReference('simv') });
}

/** Why a capture or void cannot touch the hold: there is none, or it is already decided. */
function refusal(hold: HoldRow | undefined): string {
  if (!hold) return HOLD_DECLINE_CODES.noAuthorization;
  return hold.state === 'captured'
    ? HOLD_DECLINE_CODES.alreadyCaptured
    : HOLD_DECLINE_CODES.authorizationVoided;
}

/** Decides a held hold (`set` the new state and amounts); anything else is a broken lock. */
async function decide(client: Queryable, set: string, values: unknown[]): Promise<void> {
  const { rowCount } = await client.query(
    `UPDATE acquirer_simulator_holds SET ${set}, updated_at = clock_timestamp()
      WHERE payment_id = $1 AND state = 'held'`,
    values,
  );
  if (rowCount !== 1) throw new Error('the hold changed while its payment was locked');
}

function declined(client: Queryable, call: HoldCall, code: string): Promise<HoldResult> {
  return remember(client, call, { outcome: 'declined', code });
}

/** Stores the key's answer (a retried key gets it again) and returns it. */
async function remember(
  client: Queryable,
  call: HoldCall,
  answer: HoldResult,
): Promise<HoldResult> {
  await client.query(
    `INSERT INTO acquirer_simulator_hold_operations
       (idempotency_key, payment_id, operation, amount, result, code, reference)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      call.idempotencyKey,
      call.paymentId,
      call.operation,
      call.amount,
      answer.outcome,
      answer.outcome === 'declined' ? answer.code : null,
      answer.outcome === 'approved' ? answer.reference : null,
    ],
  );
  return answer;
}

function newReference(prefix: string): string {
  return `${prefix}_${randomBytes(8).toString('hex')}`;
}
