import { v7 as uuidv7 } from 'uuid';
import type { Pool, PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import { NO_TRACE_CONTEXT } from '../../src/outbox/trace-context.js';
import { insertPaymentOnce } from '../../src/payments/payment-insert-single.js';
import { newPaymentResource } from '../../src/payments/payment-resource.js';
import { insertRefundOnce } from '../../src/refunds/insert-refund-once.js';
import { claimDueRefundJobs, completeRefund } from '../../src/refunds/refund-job-store.js';
import { recordCreatedEvents } from '../../src/settlement/record-created-events.js';
import { claimDueJobs, completePayments } from '../../src/settlement/settlement-job-store.js';
import { createTestDatabase, uniqueSuffix, type TestDatabase } from '../support/isolation.js';
import { eventually } from '../support/settlement-harness.js';

/**
 * Two refunds of one payment completing at once (the chaos run's refund storm, issue 27): the
 * webhook deliveries of their results must commit in `seq` order, since a delivery is claimable
 * as soon as no delivery with a lower seq of its payment is pending (and an uncommitted one is
 * not seen). The chaos run caught the later seq committed and delivered first; the completion
 * now takes the payment's row lock before writing its event. Runs as the settlement login.
 */

const TOPIC = 'payments.refund-completion-order';
const LEASE_MS = 60_000;

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const settlement = () => db.login('settlement');

/** A settled payment of 1000 for `merchantId`, as the API and settlement write it. */
async function settledPayment(merchantId: string): Promise<string> {
  const id = uuidv7();
  const createdAt = new Date();
  const body = { amount: 1000, currency: 'EUR' as const, source: 'tok_visa' as const };
  const resource = newPaymentResource(id, { ...body, metadata: {} }, createdAt);
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
  const source = { topic: TOPIC, partition: 0, offset: '0', key: id, value: '{}' };
  const eventId = paymentEventId(id, 'payment.created');
  await recordCreatedEvents(settlement(), [{ eventId, paymentId: id, replayToken: null, source }]);
  const [job] = await claimDueJobs(settlement(), 10, LEASE_MS, 5);
  expect(job?.id).toBe(id);
  const outcomes = await completePayments(
    settlement(),
    [{ id, leaseOwner: job?.leaseOwner ?? '', final: { status: 'settled' } }],
    TOPIC,
    new Date(),
  );
  expect(outcomes.get(id)).toBe('completed');
  return id;
}

async function createRefund(merchantId: string, paymentId: string): Promise<string> {
  const refundId = uuidv7();
  await insertRefundOnce(db.login('api'), {
    merchantId,
    idempotencyKey: `key-${uniqueSuffix()}`,
    fingerprint: Buffer.alloc(32),
    ttlSeconds: 3600,
    paymentId,
    refundId,
    amount: 300,
    reason: null,
    metadata: {},
    createdAt: new Date(),
    topic: TOPIC,
  });
  return refundId;
}

/**
 * `pool`, except that a transaction's COMMIT waits for `release()`: `reachedCommit` resolves
 * once one is waiting (everything before it written, seq drawn, nothing visible yet).
 */
function commitGate(pool: Pool) {
  let release: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (release = resolve));
  let reached: () => void = () => undefined;
  const reachedCommit = new Promise<void>((resolve) => (reached = resolve));
  const gated = {
    connect: async (): Promise<PoolClient> => {
      const client = await pool.connect();
      const query = client.query.bind(client) as (text: unknown, values?: unknown) => unknown;
      // pg's overloaded query(): only the plain 'COMMIT' text is held back.
      (client as { query: unknown }).query = async (text: unknown, values?: unknown) => {
        if (text === 'COMMIT') {
          reached();
          await opened;
        }
        return query(text, values);
      };
      return client;
    },
  };
  // completeRefund only connects (withTransaction); the cast stands for the rest of Pool.
  return { pool: gated as unknown as Pool, release, reachedCommit };
}

async function deliverySeq(eventId: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ seq: string }>(
    'SELECT seq::text AS seq FROM webhook_deliveries WHERE event_id = $1',
    [eventId],
  );
  return rows[0]?.seq;
}

describe('refund results of one payment', () => {
  it('when two complete at once, then their webhook deliveries commit in seq order', async () => {
    const { id: merchantId } = await createMerchant(db.pool, 'refund order');
    await db.pool.query(
      `INSERT INTO webhook_endpoints (id, merchant_id, url, enabled_events, created_at, updated_at)
       VALUES ($1, $2, 'https://example.com/hooks', '{*}', now(), now())`,
      [uuidv7(), merchantId],
    );
    const paymentId = await settledPayment(merchantId);
    const first = await createRefund(merchantId, paymentId);
    const second = await createRefund(merchantId, paymentId);
    const jobs = await claimDueRefundJobs(settlement(), 10, LEASE_MS, 5);
    const lease = (id: string) => ({
      id,
      leaseOwner: jobs.find((job) => job.id === id)?.leaseOwner ?? '',
    });
    const [firstEvent, secondEvent] = [first, second].map((id) =>
      refundEventId(id, 'refund.succeeded'),
    ) as [string, string];

    // The first completion writes its event (drawing the lower seq) and waits before COMMIT.
    const gate = commitGate(settlement());
    const firstDone = completeRefund(
      gate.pool,
      lease(first),
      { status: 'succeeded' },
      TOPIC,
      new Date(),
      NO_TRACE_CONTEXT,
    );
    await gate.reachedCommit;
    const secondDone = completeRefund(
      settlement(),
      lease(second),
      { status: 'succeeded' },
      TOPIC,
      new Date(),
      NO_TRACE_CONTEXT,
    );
    try {
      let secondSettled = false;
      void secondDone.finally(() => (secondSettled = true));

      // The second waits for the payment's row lock instead of committing a higher seq first.
      const waiting = await eventually('the second completion blocked or done', async () => {
        if (secondSettled) return 'completed first';
        // pg_locks, not pg_stat_activity (which hides other logins' waits from the owner): a
        // backend holding a tuple lock of this database's payments while waiting for a transaction.
        const { rows } = await db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n
             FROM pg_locks waits JOIN pg_locks tuple ON tuple.pid = waits.pid
            WHERE NOT waits.granted AND waits.locktype = 'transactionid'
              AND tuple.locktype = 'tuple' AND tuple.relation = 'payments'::regclass
              AND tuple.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        );
        return (rows[0]?.n ?? 0) > 0 ? 'waiting for the payment lock' : undefined;
      });
      expect(waiting).toBe('waiting for the payment lock');
      expect(await deliverySeq(secondEvent)).toBeUndefined();
    } finally {
      // Let the first commit even when the check failed (the database drop waits for it).
      gate.release();
    }
    expect(await firstDone).toBe('completed');
    expect(await secondDone).toBe('completed');
    const [firstSeq, secondSeq] = [await deliverySeq(firstEvent), await deliverySeq(secondEvent)];
    expect(BigInt(firstSeq ?? '0')).toBeLessThan(BigInt(secondSeq ?? '0'));
    expect(BigInt(firstSeq ?? '0')).toBeGreaterThan(0n);
  });
});
