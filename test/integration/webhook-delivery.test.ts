import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  attemptRows,
  deliveryState,
  endpointState,
  insertEndpoint,
  insertMerchant,
  newSecret,
  queueEvent,
  startTestDelivery,
  verifyReceived,
} from '../support/webhook-fixtures.js';
import { reapWebhookEvents } from '../../src/webhooks/webhook-delivery-worker.js';
import {
  startWebhookTestReceiver,
  type WebhookTestReceiver,
} from '../support/webhook-test-receiver.js';

/**
 * Webhook deliveries (issue 27): signed with every unexpired secret, the event id as webhook-id
 * on every attempt, retried until 2xx, 410 disabling the endpoint. The worker runs in-process on
 * the payments_webhooks login against a receiver on 127.0.0.1 (allowlisted), with a 50/100/150 ms
 * schedule; outcomes are polled with generous bounds.
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

const until = { timeout: 20_000, interval: 50 };

describe('webhook delivery', () => {
  it('when an event is queued, then the endpoint gets it signed, with the event id as webhook-id, and the delivery is delivered', async () => {
    const endpoint = await insertEndpoint(db.pool, merchantId, receiver.url('/ok'));
    const event = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [
      endpoint.id,
    ]);
    const deliveryId = event.deliveries.get(endpoint.id) ?? '';
    const delivery = startTestDelivery(db);
    try {
      await vi.waitFor(async () => {
        expect((await deliveryState(db.pool, deliveryId)).status).toBe('delivered');
      }, until);
    } finally {
      await delivery.stop();
    }
    const [request, ...more] = receiver.at('/ok');
    expect(more).toHaveLength(0);
    if (!request) throw new Error('nothing received');
    expect(request.headers['webhook-id']).toBe(event.eventId);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body).toBe(event.body);
    expect(verifyReceived(endpoint.secret, request)).toEqual(JSON.parse(event.body));
    expect(await deliveryState(db.pool, deliveryId)).toMatchObject({
      status: 'delivered',
      attempts: 1,
      last_status_code: 204,
      job: false,
    });
    expect(await attemptRows(db.pool, deliveryId)).toEqual([{ status_code: 204, error: null }]);
  });

  it('when the receiver fails the first three attempts, then the fourth delivers the same webhook-id, with four attempt rows', async () => {
    receiver.respond((request, nth) =>
      request.path === '/flaky' && nth <= 3 ? { status: 500 } : { status: 204 },
    );
    const endpoint = await insertEndpoint(db.pool, merchantId, receiver.url('/flaky'));
    const event = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.failed', [
      endpoint.id,
    ]);
    const deliveryId = event.deliveries.get(endpoint.id) ?? '';
    const delivery = startTestDelivery(db);
    try {
      await vi.waitFor(async () => {
        expect((await deliveryState(db.pool, deliveryId)).status).toBe('delivered');
      }, until);
    } finally {
      await delivery.stop();
    }
    const requests = receiver.at('/flaky');
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual(Array(4).fill(event.eventId));
    for (const request of requests) verifyReceived(endpoint.secret, request);
    expect((await attemptRows(db.pool, deliveryId)).map((a) => a.status_code)).toEqual([
      500, 500, 500, 204,
    ]);
    expect(await deliveryState(db.pool, deliveryId)).toMatchObject({ attempts: 4, job: false });
    // The 2xx cleared the failing mark the 500s set.
    expect((await endpointState(db.pool, endpoint.id))?.failing_since).toBeNull();
  });

  it('when the secret was rotated, then both the current and the rotated-out secret verify, an expired one does not', async () => {
    receiver.respond(() => ({ status: 200 }));
    const rotatedOut = newSecret();
    const expired = newSecret();
    const endpoint = await insertEndpoint(db.pool, merchantId, receiver.url('/rotated'), [
      [rotatedOut, 3_600],
      [expired, -3_600],
    ]);
    const event = await queueEvent(db.pool, merchantId, randomUUID(), 'refund.succeeded', [
      endpoint.id,
    ]);
    const delivery = startTestDelivery(db);
    try {
      await vi.waitFor(() => {
        expect(receiver.at('/rotated')).toHaveLength(1);
      }, until);
    } finally {
      await delivery.stop();
    }
    const [request] = receiver.at('/rotated');
    if (!request) throw new Error('nothing received');
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifyReceived(endpoint.secret, request)).toMatchObject({ id: event.eventId });
    expect(verifyReceived(rotatedOut, request)).toMatchObject({ id: event.eventId });
    expect(() => verifyReceived(expired, request)).toThrow(/No matching signature/);
  });

  it('when the endpoint answers 410, then it is disabled (gone) and its pending deliveries fail', async () => {
    receiver.respond((request) => (request.path === '/gone' ? { status: 410 } : { status: 204 }));
    const endpoint = await insertEndpoint(db.pool, merchantId, receiver.url('/gone'));
    const events = [
      await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [endpoint.id]),
      await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [endpoint.id]),
    ];
    const ids = events.map((event) => event.deliveries.get(endpoint.id) ?? '');
    const delivery = startTestDelivery(db, { WEBHOOK_ENDPOINT_CONCURRENCY: '1' });
    try {
      await vi.waitFor(async () => {
        const states = await Promise.all(ids.map((id) => deliveryState(db.pool, id)));
        expect(states.map((s) => s.status)).toEqual(['failed', 'failed']);
      }, until);
    } finally {
      await delivery.stop();
    }
    const states = await Promise.all(ids.map((id) => deliveryState(db.pool, id)));
    expect(states.map((s) => s.failed_reason).sort()).toEqual(['endpoint_disabled', 'gone']);
    expect(states.every((s) => !s.job)).toBe(true);
    expect(receiver.at('/gone')).toHaveLength(1);
    expect(await endpointState(db.pool, endpoint.id)).toMatchObject({ disabled_reason: 'gone' });
  });

  it('when events are older than the retention, then the reaper deletes them with their deliveries, except one still pending', async () => {
    const endpoint = await insertEndpoint(db.pool, merchantId, receiver.url('/reaped'));
    const old = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [
      endpoint.id,
    ]);
    const oldPending = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.failed', [
      endpoint.id,
    ]);
    const fresh = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.failed', [
      endpoint.id,
    ]);
    await db.pool.query(
      `UPDATE webhook_deliveries SET status = 'delivered' WHERE event_id = ANY($1)`,
      [[old.eventId, fresh.eventId]],
    );
    await db.pool.query(`DELETE FROM webhook_delivery_jobs WHERE endpoint_id = $1`, [endpoint.id]);
    await db.pool.query(
      `UPDATE webhook_events SET created_at = now() - interval '2 days' WHERE event_id = ANY($1)`,
      [[old.eventId, oldPending.eventId]],
    );
    // As the webhooks role runs it, a day's retention.
    expect(await reapWebhookEvents(db.login('webhooks'), 86_400, 100)).toBe(1);
    const { rows } = await db.pool.query<{ event_id: string }>(
      `SELECT e.event_id FROM webhook_events e JOIN webhook_deliveries d USING (event_id)
        WHERE d.endpoint_id = $1 ORDER BY e.created_at`,
      [endpoint.id],
    );
    expect(rows.map((row) => row.event_id)).toEqual([oldPending.eventId, fresh.eventId]);
  });
});
