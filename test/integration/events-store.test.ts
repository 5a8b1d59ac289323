import { createHash, randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settlementSweeps, startRetentionReaper } from '../../src/jobs/retention-reaper.js';
import { insertOutboxEvents, type OutboxEvent } from '../../src/outbox/outbox-writer.js';
import { insertPaymentBatch } from '../../src/payments/payment-insert-batch.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { withTransaction } from '../../src/platform/database/db.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { webhookFanout } from '../../src/webhooks/webhook-fanout.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { getJson, postPayment, startTestApi, type TestApi } from '../support/test-api.js';

/**
 * Issue 40 item 7 (DESIGN 129): every event is listed exactly when it is committed. The outbox
 * writer's statements (POST /payments one at a time and in a batch, a refund's create, the
 * result events settlement writes with the webhook fan-out) each write the merchant's copy with
 * the outbox row, from the same values, as the logins that run them; a rolled-back write lists
 * nothing; after EVENT_RETENTION_DAYS an event is neither listed nor kept.
 */

const DAY = 86_400;
let db: TestDatabase;
let api: TestApi;
let merchant: { id: string; apiKey: string };

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  merchant = await api.merchant('Event store');
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

/** The settlement login's write of a result event, with the webhook fan-out, as it completes a payment. */
function settledEvent(paymentId: string, eventId = paymentEventId(paymentId, 'payment.settled')) {
  return {
    eventId,
    type: 'payment.settled',
    aggregateId: paymentId,
    topic: 'payments',
    data: JSON.stringify({ id: paymentId, object: 'payment', status: 'settled' }),
    createdAt: new Date(),
    trace: {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: null,
    },
    merchantId: merchant.id,
  } satisfies OutboxEvent;
}

function batchRecord(key: string) {
  const id = uuidv7();
  const data = { id, amount: 500, currency: 'EUR', status: 'pending' };
  return {
    record: {
      merchantId: merchant.id,
      idempotencyKey: key,
      fingerprint: createHash('sha256').update(key).digest(),
      ttlSeconds: 3600,
      response: { status: 202, body: JSON.stringify(data) },
      payment: {
        id,
        amount: 500,
        currency: 'EUR',
        source: 'tok_visa',
        description: null,
        metadata: {},
        createdAt: new Date(),
      },
      event: {
        id: paymentEventId(id, 'payment.created'),
        type: 'payment.created',
        topic: 'payments',
        data,
      },
    },
    trace: { traceparent: null, tracestate: null },
  };
}

describe('the merchant copy of every event', () => {
  it('when each writer writes its events, then every outbox row has its listed copy with the same values, and nothing else is listed', async () => {
    await postPayment(api, { apiKey: merchant.apiKey });
    const refunded = await settledPayment(api, db, merchant.apiKey);
    expect((await postRefund(api, { apiKey: merchant.apiKey, paymentId: refunded })).status).toBe(
      202,
    );
    const written = await insertPaymentBatch(db.login('api'), [
      batchRecord('b1'),
      batchRecord('b2'),
    ]);
    expect(written.size).toBe(2);
    await withTransaction(db.login('settlement'), (client) =>
      insertOutboxEvents(client, [settledEvent(refunded)], webhookFanout),
    );

    const { rows } = await db.pool.query<{ outbox: string | null; listed: string | null }>(
      `SELECT row(o.event_id, o.event_type, o.aggregate_id, o.data, o.created_at, o.traceparent,
                 o.tracestate)::text AS outbox,
              row(e.event_id, e.event_type, e.subject, e.data, e.created_at, e.traceparent,
                  e.tracestate)::text AS listed
         FROM outbox o FULL JOIN merchant_events e ON e.event_id = o.event_id`,
    );
    // payment.created x4 (one, the refunded, two batched), refund.created, payment.settled.
    expect(rows).toHaveLength(6);
    for (const row of rows) expect(row.listed).toBe(row.outbox);
    const merchants = await db.pool.query<{ merchant_id: string }>(
      'SELECT DISTINCT merchant_id FROM merchant_events',
    );
    expect(merchants.rows).toEqual([{ merchant_id: merchant.id }]);
    const listed = await getJson(api, '/events?limit=100', merchant.apiKey);
    expect((listed.json.data as unknown[]).length).toBe(6);
  });

  it('when the transaction that writes an event rolls back, then it is neither in the outbox nor listed', async () => {
    const paymentId = randomUUID();
    const failure = new Error('rolled back on purpose');
    await expect(
      withTransaction(db.login('settlement'), async (client) => {
        await insertOutboxEvents(client, [settledEvent(paymentId)], webhookFanout);
        throw failure;
      }),
    ).rejects.toBe(failure);
    const id = paymentEventId(paymentId, 'payment.settled');
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM outbox WHERE event_id = $1)
            + (SELECT count(*) FROM merchant_events WHERE event_id = $1) AS n`,
      [id],
    );
    expect(Number(rows[0]?.n)).toBe(0);
    expect((await getJson(api, `/events/${id}`, merchant.apiKey)).status).toBe(404);
  });

  it('when the outbox accepts an event id again after purging its row, then the write succeeds and the listed copy stays the first', async () => {
    const paymentId = randomUUID();
    const first = settledEvent(paymentId);
    await withTransaction(db.login('settlement'), (c) => insertOutboxEvents(c, [first]));
    await db.pool.query('DELETE FROM outbox WHERE event_id = $1', [first.eventId]);
    const again = { ...first, createdAt: new Date(first.createdAt.getTime() + 60_000) };
    await withTransaction(db.login('settlement'), (c) => insertOutboxEvents(c, [again]));
    const { rows } = await db.pool.query<{ created_at: Date }>(
      'SELECT created_at FROM merchant_events WHERE event_id = $1',
      [first.eventId],
    );
    expect(rows.map((r) => r.created_at.getTime())).toEqual([first.createdAt.getTime()]);
  });
});

describe('retention', () => {
  it('when events are older than EVENT_RETENTION_DAYS, then they are not served at once and the settlement login deletes them in batches, keeping the recent', async () => {
    const aged = async (days: number): Promise<string> => {
      const event = settledEvent(randomUUID());
      event.createdAt = new Date(Date.now() - days * DAY * 1000);
      await withTransaction(db.login('settlement'), (c) => insertOutboxEvents(c, [event]));
      return event.eventId;
    };
    const old = [await aged(31), await aged(40), await aged(30.01)];
    const recent = await aged(29.9);

    // The window applies when reading: not served even before the reaper runs.
    const listed = await getJson(api, '/events?limit=100', merchant.apiKey);
    const ids = (listed.json.data as { id: string }[]).map((e) => e.id);
    expect(ids).toContain(recent);
    for (const id of old) {
      expect(ids).not.toContain(id);
      expect((await getJson(api, `/events/${id}`, merchant.apiKey)).status).toBe(404);
      const cursor = await getJson(api, `/events?starting_after=${id}`, merchant.apiKey);
      expect(cursor.status).toBe(400);
    }

    const reaper = startRetentionReaper(
      db.login('settlement'),
      createLogger(testConfig({ LOG_LEVEL: 'silent' })),
      settlementSweeps({
        processedEventSeconds: 30 * DAY,
        deadJobSeconds: 30 * DAY,
        merchantEventSeconds: 30 * DAY,
      }),
      { batch: 2, intervalMs: 3_600_000 },
    );
    try {
      expect(await reaper.runOnce()).toMatchObject({ merchant_events: 3 });
    } finally {
      await reaper.stop();
    }
    const { rows } = await db.pool.query<{ event_id: string }>(
      'SELECT event_id FROM merchant_events WHERE event_id = ANY($1)',
      [[...old, recent]],
    );
    expect(rows.map((r) => r.event_id)).toEqual([recent]);
  });
});
