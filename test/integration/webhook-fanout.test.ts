import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { toKafkaRecord } from '../../src/outbox/cloud-event.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import { NO_TRACE_CONTEXT } from '../../src/outbox/trace-context.js';
import { insertPaymentOnce } from '../../src/payments/payment-insert-single.js';
import { newPaymentResource } from '../../src/payments/payment-resource.js';
import { insertRefundOnce } from '../../src/refunds/insert-refund-once.js';
import {
  claimDueRefundJobs,
  completeRefund,
  type RefundFinal,
} from '../../src/refunds/refund-job-store.js';
import { recordCreatedEvents } from '../../src/settlement/record-created-events.js';
import {
  claimDueJobs,
  completePayments,
  type Completion,
  type FinalStatus,
} from '../../src/settlement/settlement-job-store.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';

/**
 * The webhook fan-out (issue 27): the result events that settlement and the refund worker write
 * to the outbox are, in the same statement, stored for the merchant's endpoints with one
 * delivery and one delivery job per enabled, subscribed endpoint. Everything below runs as the
 * settlement login (payments_settlement), as deployed; the owner pool only sets up and looks.
 */

const TOPIC = 'payments.webhook-fanout';
const LEASE_MS = 60_000;

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const settlement = () => db.login('settlement');

async function endpoint(merchantId: string, events: string[], disabled = false): Promise<string> {
  const id = uuidv7();
  await db.pool.query(
    `INSERT INTO webhook_endpoints (id, merchant_id, url, enabled_events, disabled_at,
                                    disabled_reason, created_at, updated_at)
     VALUES ($1, $2, 'https://example.com/hooks', $3, $4, $5, now(), now())`,
    [id, merchantId, events, disabled ? new Date() : null, disabled ? 'merchant' : null],
  );
  return id;
}

/** A payment as POST /payments writes it (API login), taken into processing by settlement. */
async function processingPayment(merchantId: string, amount = 1000): Promise<string> {
  const id = uuidv7();
  const createdAt = new Date();
  const body = { amount, currency: 'EUR' as const, source: 'tok_visa' as const, metadata: {} };
  const resource = newPaymentResource(id, body, createdAt);
  await insertPaymentOnce(db.login('api'), {
    merchantId,
    idempotencyKey: `key-${uniqueSuffix()}`,
    fingerprint: Buffer.alloc(32),
    ttlSeconds: 3600,
    response: { status: 202, body: JSON.stringify(resource) },
    payment: { ...body, id, description: null, metadata: {}, createdAt },
    event: {
      id: paymentEventId(id, 'payment.created'),
      type: 'payment.created',
      topic: TOPIC,
      data: resource,
    },
  });
  const eventId = paymentEventId(id, 'payment.created');
  const source = { topic: TOPIC, partition: 0, offset: '0', key: id, value: '{}' };
  expect(
    await recordCreatedEvents(settlement(), [
      { eventId, paymentId: id, replayToken: null, source },
    ]),
  ).toEqual(['accepted']);
  return id;
}

/** Claims the payments' jobs and completes them with `finals`, as the settlement worker does. */
async function completeAll(finals: Map<string, FinalStatus>): Promise<void> {
  const jobs = await claimDueJobs(settlement(), 100, LEASE_MS, 5);
  expect(jobs.map((job) => job.id).sort()).toEqual([...finals.keys()].sort());
  const outcomes = await completePayments(
    settlement(),
    jobs.map((job) => ({
      id: job.id,
      leaseOwner: job.leaseOwner,
      final: finals.get(job.id) ?? { status: 'failed', failureCode: 'not_in_test' },
    })),
    TOPIC,
    new Date(),
  );
  expect([...outcomes.values()].every((outcome) => outcome === 'completed')).toBe(true);
}

/** A refund as POST /payments/{id}/refunds writes it, then completed by the refund worker's step. */
async function refund(
  merchantId: string,
  paymentId: string,
  amount: number,
  final: RefundFinal,
): Promise<string> {
  const refundId = uuidv7();
  await insertRefundOnce(db.login('api'), {
    merchantId,
    idempotencyKey: `key-${uniqueSuffix()}`,
    fingerprint: Buffer.alloc(32),
    ttlSeconds: 3600,
    paymentId,
    refundId,
    amount,
    reason: null,
    metadata: {},
    createdAt: new Date(),
    topic: TOPIC,
  });
  const [job] = await claimDueRefundJobs(settlement(), 10, LEASE_MS, 5);
  expect(job?.id).toBe(refundId);
  const outcome = await completeRefund(
    settlement(),
    { id: refundId, leaseOwner: job?.leaseOwner ?? '' },
    final,
    TOPIC,
    new Date(),
    NO_TRACE_CONTEXT,
  );
  expect(outcome).toBe('completed');
  return refundId;
}

/** One event's deliveries are inserted in endpoint id order. */
const byEndpoint = (a: string[], b: string[]): number => ((a[0] ?? '') < (b[0] ?? '') ? -1 : 1);

interface DeliveryFact {
  endpoint_id: string;
  event_id: string;
  payment_id: string;
  seq: string;
  status: string;
  job_endpoint: string | null;
  job_payment: string | null;
  job_seq: string | null;
  job_state: string | null;
}

/** The deliveries of `paymentIds` with their jobs, in seq order. */
async function deliveries(paymentIds: string[]): Promise<DeliveryFact[]> {
  const { rows } = await db.pool.query<DeliveryFact>(
    `SELECT d.endpoint_id, d.event_id, d.payment_id, d.seq, d.status, j.endpoint_id AS job_endpoint,
            j.payment_id AS job_payment, j.seq AS job_seq, j.state AS job_state
       FROM webhook_deliveries d LEFT JOIN webhook_delivery_jobs j ON j.delivery_id = d.id
      WHERE d.payment_id = ANY ($1::uuid[]) ORDER BY d.seq`,
    [paymentIds],
  );
  return rows;
}

async function storedEvents(paymentIds: string[]) {
  const { rows } = await db.pool.query<{
    event_id: string;
    merchant_id: string;
    event_type: string;
    body: string;
  }>(
    `SELECT event_id, merchant_id, event_type, body FROM webhook_events
      WHERE payment_id = ANY ($1::uuid[]) ORDER BY event_type, event_id`,
    [paymentIds],
  );
  return rows;
}

/** The CloudEvent the relay publishes for an outbox row. */
async function publishedEnvelope(eventId: string): Promise<unknown> {
  const { rows } = await db.pool.query<{
    event_id: string;
    event_type: string;
    aggregate_id: string;
    data: unknown;
    created_at: Date;
  }>(
    'SELECT event_id, event_type, aggregate_id, data, created_at FROM outbox WHERE event_id = $1',
    [eventId],
  );
  const row = rows[0];
  if (!row) throw new Error(`no outbox row ${eventId}`);
  const record = toKafkaRecord({
    eventId: row.event_id,
    eventType: row.event_type,
    aggregateId: row.aggregate_id,
    data: row.data,
    createdAt: row.created_at,
  });
  return JSON.parse(record.value);
}

describe('webhook fan-out in the outbox writer', () => {
  it('when a merchant with subscribed, catch-all, disabled and refund-only endpoints has payments settle, fail and get refunded, then each event gets exactly one delivery and job per enabled subscribed endpoint, in seq order', async () => {
    const merchant = await createMerchant(db.pool, 'fan-out');
    const settledOnly = await endpoint(merchant.id, ['payment.settled']);
    const everything = await endpoint(merchant.id, ['*']);
    await endpoint(merchant.id, ['*'], true);
    const refundsOnly = await endpoint(merchant.id, ['refund.succeeded', 'refund.failed']);

    const paid = await processingPayment(merchant.id);
    const declined = await processingPayment(merchant.id);
    await completeAll(
      new Map<string, FinalStatus>([
        [paid, { status: 'settled' }],
        [declined, { status: 'failed', failureCode: 'card_declined' }],
      ]),
    );
    const succeeded = await refund(merchant.id, paid, 400, { status: 'succeeded' });
    const failed = await refund(merchant.id, paid, 300, {
      status: 'failed',
      failureCode: 'refund_declined',
    });

    const ids = {
      settled: paymentEventId(paid, 'payment.settled'),
      failed: paymentEventId(declined, 'payment.failed'),
      refundSucceeded: refundEventId(succeeded, 'refund.succeeded'),
      refundFailed: refundEventId(failed, 'refund.failed'),
    };
    const events = await storedEvents([paid, declined]);
    expect(events.map((e) => [e.event_type, e.event_id, e.merchant_id])).toEqual([
      ['payment.failed', ids.failed, merchant.id],
      ['payment.settled', ids.settled, merchant.id],
      ['refund.failed', ids.refundFailed, merchant.id],
      ['refund.succeeded', ids.refundSucceeded, merchant.id],
    ]);
    // The body is the CloudEvent the relay publishes for the same outbox row.
    for (const event of events) {
      expect(JSON.parse(event.body)).toEqual(await publishedEnvelope(event.event_id));
    }

    const rows = await deliveries([paid, declined]);
    expect(rows.map((d) => [d.endpoint_id, d.event_id, d.payment_id])).toEqual([
      // The completion's two events, in its order; each event's endpoints by id.
      ...[
        [settledOnly, ids.settled, paid],
        [everything, ids.settled, paid],
      ].sort(byEndpoint),
      [everything, ids.failed, declined],
      ...[
        [everything, ids.refundSucceeded, paid],
        [refundsOnly, ids.refundSucceeded, paid],
      ].sort(byEndpoint),
      ...[
        [everything, ids.refundFailed, paid],
        [refundsOnly, ids.refundFailed, paid],
      ].sort(byEndpoint),
    ]);
    for (const d of rows) {
      expect(d).toMatchObject({
        status: 'pending',
        job_endpoint: d.endpoint_id,
        job_payment: d.payment_id,
        job_seq: d.seq,
        job_state: 'pending',
      });
    }
    // A payment's deliveries to one endpoint have increasing seq in event order.
    const toEverything = rows.filter((d) => d.endpoint_id === everything && d.payment_id === paid);
    expect(toEverything.map((d) => d.event_id)).toEqual([
      ids.settled,
      ids.refundSucceeded,
      ids.refundFailed,
    ]);
    const seqs = toEverything.map((d) => Number(d.seq));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(3);
  });

  it('when a merchant has no endpoints, then its result events are written to the outbox only', async () => {
    const merchant = await createMerchant(db.pool, 'no endpoints');
    const paid = await processingPayment(merchant.id);
    await completeAll(new Map<string, FinalStatus>([[paid, { status: 'settled' }]]));
    await refund(merchant.id, paid, 100, { status: 'succeeded' });

    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox
        WHERE aggregate_id = $1 AND event_type IN ('payment.settled', 'refund.succeeded')`,
      [paid],
    );
    expect(rows[0]?.n).toBe(2);
    expect(await storedEvents([paid])).toEqual([]);
    expect(await deliveries([paid])).toEqual([]);
  });

  it('when a merchant has only a disabled endpoint, then the event is kept for a replay but nothing is delivered', async () => {
    const merchant = await createMerchant(db.pool, 'disabled only');
    await endpoint(merchant.id, ['*'], true);
    const paid = await processingPayment(merchant.id);
    await completeAll(new Map<string, FinalStatus>([[paid, { status: 'settled' }]]));

    expect((await storedEvents([paid])).map((e) => e.event_type)).toEqual(['payment.settled']);
    expect(await deliveries([paid])).toEqual([]);
  });

  it('when the statement fails on a delivery job, then neither the event, its webhook rows nor the payment change are committed; once it succeeds they all are', async () => {
    const merchant = await createMerchant(db.pool, 'failing');
    const hooked = await endpoint(merchant.id, ['*']);
    const paid = await processingPayment(merchant.id);
    await db.pool.query(`
      CREATE TABLE test_fanout_fault (payment_id uuid PRIMARY KEY);
      -- SECURITY DEFINER: it fires in settlement's statement, which may not read the test's table.
      CREATE FUNCTION test_fanout_fail() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM test_fanout_fault WHERE payment_id = NEW.payment_id) THEN
          RAISE EXCEPTION 'injected fault on delivery job of %', NEW.payment_id;
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_fanout_fail BEFORE INSERT ON webhook_delivery_jobs
        FOR EACH ROW EXECUTE FUNCTION test_fanout_fail();
    `);
    await db.pool.query('INSERT INTO test_fanout_fault (payment_id) VALUES ($1)', [paid]);

    const [job] = await claimDueJobs(settlement(), 10, LEASE_MS, 5);
    expect(job?.id).toBe(paid);
    const completion: Completion = {
      id: paid,
      leaseOwner: job?.leaseOwner ?? '',
      final: { status: 'settled' },
    };
    await expect(completePayments(settlement(), [completion], TOPIC, new Date())).rejects.toThrow(
      /injected fault/,
    );

    const facts = async () => {
      const { rows } = await db.pool.query<{
        status: string;
        outbox: number;
        events: number;
        deliveries: number;
        jobs: number;
      }>(
        `SELECT p.status,
                (SELECT count(*)::int FROM outbox o
                  WHERE o.aggregate_id = p.id AND o.event_type = 'payment.settled') AS outbox,
                (SELECT count(*)::int FROM webhook_events e WHERE e.payment_id = p.id) AS events,
                (SELECT count(*)::int FROM webhook_deliveries d WHERE d.payment_id = p.id) AS deliveries,
                (SELECT count(*)::int FROM webhook_delivery_jobs j WHERE j.payment_id = p.id) AS jobs
           FROM payments p WHERE p.id = $1`,
        [paid],
      );
      return rows[0];
    };
    expect(await facts()).toEqual({
      status: 'processing',
      outbox: 0,
      events: 0,
      deliveries: 0,
      jobs: 0,
    });

    await db.pool.query('DELETE FROM test_fanout_fault');
    expect(await completePayments(settlement(), [completion], TOPIC, new Date())).toEqual(
      new Map([[paid, 'completed']]),
    );
    expect(await facts()).toEqual({
      status: 'settled',
      outbox: 1,
      events: 1,
      deliveries: 1,
      jobs: 1,
    });
    expect((await deliveries([paid]))[0]?.endpoint_id).toBe(hooked);
  });
});
