import type { Queryable } from '../platform/database/db.js';
import type { ChargeRequest } from './acquirer.js';

/** One common call: charged with `result` and `reference` unless its key already was. */
export interface FirstCharge {
  request: ChargeRequest;
  result: 'approved' | 'declined';
  reference: string;
}

interface Waiting {
  charge: FirstCharge;
  resolve: (charged: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * The simulator's common calls (a key's first charge by token alone) written together: the
 * calls that arrive in one turn of the event loop become one statement (its own transaction),
 * instead of one round trip to Postgres each. A burst of charges (settlement fills its slots
 * at once) then costs the acquirer one send and one answer, not one per call.
 *
 * Resolves true when this call inserted the key's charge (and logged itself), false when the
 * key had one already, or appears earlier in the same batch: such a call is answered by the
 * locked path, as a replay, after the batch committed. The primary key decides, as for a
 * single call: two concurrent statements cannot both charge a key.
 */
export function createChargeBatcher(db: Queryable): (charge: FirstCharge) => Promise<boolean> {
  let waiting: Waiting[] = [];

  async function flush(batch: Waiting[]): Promise<void> {
    const firsts = new Map<string, Waiting>();
    const repeats: Waiting[] = [];
    for (const item of batch) {
      const key = item.charge.request.idempotencyKey;
      if (firsts.has(key)) repeats.push(item);
      else firsts.set(key, item);
    }
    const items = [...firsts.values()];
    const column = <T>(pick: (charge: FirstCharge) => T): T[] =>
      items.map((item) => pick(item.charge));
    try {
      const { rows } = await db.query<{ idempotency_key: string }>({
        name: 'acquirer-simulator.charge-batch',
        text: `WITH input AS (
           SELECT * FROM unnest($1::text[], $2::uuid[], $3::text[], $4::bigint[], $5::text[],
                                $6::text[], $7::text[])
             AS t(idempotency_key, payment_id, source, amount, currency, result, reference)
         ), charge AS (
           INSERT INTO acquirer_simulator_charges (idempotency_key, payment_id, result, reference)
           SELECT idempotency_key, payment_id, result, reference FROM input
           ON CONFLICT (idempotency_key) DO NOTHING
           RETURNING idempotency_key
         ), call AS (
           INSERT INTO acquirer_simulator_calls
             (idempotency_key, payment_id, source, amount, currency, result, replayed)
           SELECT i.idempotency_key, i.payment_id, i.source, i.amount, i.currency, i.result, false
             FROM input i JOIN charge c USING (idempotency_key)
         )
         SELECT idempotency_key FROM charge`,
        values: [
          column((c) => c.request.idempotencyKey),
          column((c) => c.request.paymentId),
          column((c) => c.request.source),
          column((c) => c.request.amount),
          column((c) => c.request.currency),
          column((c) => c.result),
          column((c) => c.reference),
        ],
      });
      const charged = new Set(rows.map((row) => row.idempotency_key));
      for (const item of items) item.resolve(charged.has(item.charge.request.idempotencyKey));
      for (const item of repeats) item.resolve(false);
    } catch (error) {
      for (const item of batch) item.reject(error);
    }
  }

  return (charge) =>
    new Promise<boolean>((resolve, reject) => {
      if (waiting.length === 0) {
        setImmediate(() => {
          const batch = waiting;
          waiting = [];
          void flush(batch);
        });
      }
      waiting.push({ charge, resolve, reject });
    });
}
