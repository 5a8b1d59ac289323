import { randomUUID } from 'node:crypto';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { sql, type Pool } from '../../src/platform/database/db.js';

/** A payment snapshot the size of the API's (about 400 bytes of JSON). */
export function paymentSnapshot(id: string): Record<string, unknown> {
  return {
    id,
    object: 'payment',
    amount: 4_200,
    currency: 'EUR',
    status: 'pending',
    source: 'tok_visa',
    description: 'Order #12345, two items',
    metadata: { order_id: 'ord_12345', customer: 'cus_67890' },
    created_at: new Date().toISOString(),
  };
}

const INSERT_ONE = sql`
  INSERT INTO outbox (event_id, event_type, aggregate_id, topic, data, created_at)
  VALUES ($1, 'payment.created', $2, $3, $4, clock_timestamp())`;

/** One payment.created row, committed on its own; resolves its event id. */
export async function insertOutboxRow(pool: Pool, topic: string): Promise<string> {
  const paymentId = randomUUID();
  const eventId = paymentEventId(paymentId, 'payment.created');
  await pool.query(INSERT_ONE, [
    eventId,
    paymentId,
    topic,
    JSON.stringify(paymentSnapshot(paymentId)),
  ]);
  return eventId;
}

/** `count` payment.created rows, inserted 1,000 per statement. */
export async function insertOutboxBacklog(pool: Pool, topic: string, count: number): Promise<void> {
  for (let done = 0; done < count; done += 1_000) {
    const ids = Array.from({ length: Math.min(1_000, count - done) }, () => randomUUID());
    await pool.query(
      sql`
        INSERT INTO outbox (event_id, event_type, aggregate_id, topic, data, created_at)
        SELECT e.event_id, 'payment.created', e.payment_id, $3, e.data, clock_timestamp()
          FROM unnest($1::uuid[], $2::uuid[], $4::jsonb[]) AS e(event_id, payment_id, data)`,
      [
        ids.map((id) => paymentEventId(id, 'payment.created')),
        ids,
        topic,
        ids.map((id) => JSON.stringify(paymentSnapshot(id))),
      ],
    );
  }
}

/** One event that is not part of any measurement. */
export function warmUpEvent() {
  const paymentId = randomUUID();
  return {
    eventId: paymentEventId(paymentId, 'payment.created'),
    eventType: 'payment.created',
    aggregateId: paymentId,
    data: paymentSnapshot(paymentId),
    createdAt: new Date(),
  };
}

/** Outbox rows neither published nor parked. */
export async function pendingOutboxRows(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL AND parked_at IS NULL',
  );
  return rows[0]?.n ?? 0;
}
