import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  attemptRows,
  deliveryState,
  insertEndpoint,
  insertMerchant,
  queueEvent,
  startTestDelivery,
} from '../support/webhook-fixtures.js';
import {
  startWebhookTestReceiver,
  type WebhookTestReceiver,
} from '../support/webhook-test-receiver.js';

/**
 * Order and fairness of webhook deliveries (issue 27): a payment's later event never overtakes
 * its earlier one to the same endpoint, even through retries; a hanging endpoint holds at most
 * WEBHOOK_ENDPOINT_CONCURRENCY slots, so another endpoint's deliveries go through meanwhile.
 */

let db: TestDatabase;
let receiver: WebhookTestReceiver;
let merchantId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = await startWebhookTestReceiver();
  merchantId = await insertMerchant(db.pool);
});

afterAll(async () => {
  await receiver.close();
  await db.drop();
});

const until = { timeout: 40_000, interval: 50 };

async function allStatuses(ids: readonly string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await deliveryState(db.pool, id)).status));
}

describe('webhook order and fairness', () => {
  it('when a payment settled and then refunded, and the settled delivery fails twice, then the refund is sent only after the settled one is delivered', async () => {
    const endpoint = await insertEndpoint(db.pool, merchantId, receiver.url('/ordered'));
    const paymentId = randomUUID();
    const settled = await queueEvent(db.pool, merchantId, paymentId, 'payment.settled', [
      endpoint.id,
    ]);
    const refunded = await queueEvent(db.pool, merchantId, paymentId, 'refund.succeeded', [
      endpoint.id,
    ]);
    // Another payment's event to the same endpoint is not held back by this one.
    const other = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.failed', [
      endpoint.id,
    ]);
    const failures = new Map<string, number>();
    receiver.respond((request) => {
      const id = String(request.headers['webhook-id']);
      if (id !== settled.eventId) return { status: 204 };
      const failed = failures.get(id) ?? 0;
      failures.set(id, failed + 1);
      return failed < 2 ? { status: 503 } : { status: 204 };
    });
    const ids = [settled, refunded, other].map((event) => event.deliveries.get(endpoint.id) ?? '');
    const delivery = startTestDelivery(db);
    try {
      await vi.waitFor(async () => {
        expect(await allStatuses(ids)).toEqual(['delivered', 'delivered', 'delivered']);
      }, until);
    } finally {
      await delivery.stop();
    }
    const order = receiver.at('/ordered').map((request) => request.headers['webhook-id']);
    const payments = order.filter((id) => id !== other.eventId);
    expect(payments).toEqual([settled.eventId, settled.eventId, settled.eventId, refunded.eventId]);
    // The other payment's event did not wait for the settled one's retries.
    expect(order.indexOf(other.eventId)).toBeLessThan(order.lastIndexOf(settled.eventId));
  });

  it('when one endpoint hangs, then it holds only its own slots: another endpoint gets all its deliveries meanwhile, and the hung ones time out and are retried', async () => {
    let hanging = true;
    receiver.respond((request) => (request.path === '/hang' && hanging ? 'hang' : { status: 204 }));
    const slow = await insertEndpoint(db.pool, merchantId, receiver.url('/hang'));
    const fast = await insertEndpoint(db.pool, merchantId, receiver.url('/fast'));
    // The hanging endpoint's deliveries are queued first, so they are claimed first.
    const slowIds: string[] = [];
    for (let i = 0; i < 6; i++) {
      const event = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [
        slow.id,
      ]);
      slowIds.push(event.deliveries.get(slow.id) ?? '');
    }
    const fastIds: string[] = [];
    for (let i = 0; i < 6; i++) {
      const event = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [
        fast.id,
      ]);
      fastIds.push(event.deliveries.get(fast.id) ?? '');
    }
    const delivery = startTestDelivery(db, {
      WEBHOOK_CONCURRENCY: '4',
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      WEBHOOK_TIMEOUT_MS: '6000',
    });
    try {
      await vi.waitFor(async () => {
        expect(await allStatuses(fastIds)).toEqual(Array(6).fill('delivered'));
      }, until);
      // Meanwhile the hanging endpoint had exactly its two slots and none of them has ended.
      expect(receiver.at('/hang')).toHaveLength(2);
      const ended = await Promise.all(slowIds.map((id) => attemptRows(db.pool, id)));
      expect(ended.flat()).toHaveLength(0);

      // The hung attempts time out (recorded as such) and are retried.
      await vi.waitFor(async () => {
        const attempts = (await Promise.all(slowIds.map((id) => attemptRows(db.pool, id)))).flat();
        expect(attempts.length).toBeGreaterThanOrEqual(2);
      }, until);
      const attempts = (await Promise.all(slowIds.map((id) => attemptRows(db.pool, id)))).flat();
      for (const attempt of attempts) {
        expect(attempt).toEqual({ status_code: null, error: 'no answer within 6000 ms' });
      }
      hanging = false;
      await vi.waitFor(async () => {
        expect(await allStatuses(slowIds)).toEqual(Array(6).fill('delivered'));
      }, until);
    } finally {
      hanging = false;
      await delivery.stop();
    }
  });
});
