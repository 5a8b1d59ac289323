import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { capturedLogger } from '../support/captured-logger.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import {
  attemptRows,
  deliveryState,
  endpointState,
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
 * Retries of webhook deliveries (issue 27): Retry-After honoured (and capped at the schedule's
 * longest step), the schedule exhausted (the delivery failed; an endpoint failing for longer than
 * the whole schedule disabled), and an address the policy refuses never connected to.
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

const until = { timeout: 30_000, interval: 50 };

/** The gap (ms) between the first two requests to `path`. */
function gapMs(path: string): number {
  const [first, second] = receiver.at(path);
  if (!first || !second) throw new Error(`fewer than two requests to ${path}`);
  return second.at - first.at;
}

async function deliverOne(path: string, overrides: Record<string, string>, host = '127.0.0.1') {
  const url = receiver.url(path).replace('127.0.0.1', host);
  const endpoint = await insertEndpoint(db.pool, merchantId, url);
  const event = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [
    endpoint.id,
  ]);
  const deliveryId = event.deliveries.get(endpoint.id) ?? '';
  const delivery = startTestDelivery(db, overrides);
  try {
    await vi.waitFor(async () => {
      expect((await deliveryState(db.pool, deliveryId)).status).not.toBe('pending');
    }, until);
  } finally {
    await delivery.stop();
  }
  return { endpoint, deliveryId };
}

describe('webhook retries', () => {
  it('when the endpoint answers 503 with Retry-After: 1, then the next attempt waits at least that second, not the 50 ms step', async () => {
    receiver.respond((request, nth) =>
      request.path === '/retry-after' && nth === 1
        ? { status: 503, headers: { 'retry-after': '1' } }
        : { status: 204 },
    );
    const { deliveryId } = await deliverOne('/retry-after', {
      WEBHOOK_RETRY_SCHEDULE: '50ms,5s',
    });
    expect((await deliveryState(db.pool, deliveryId)).status).toBe('delivered');
    expect(gapMs('/retry-after')).toBeGreaterThanOrEqual(950);
  });

  it('when Retry-After is an HTTP date an hour away, then it is capped at the longest step', async () => {
    const inAnHour = new Date(Date.now() + 3_600_000).toUTCString();
    receiver.respond((request, nth) =>
      request.path === '/retry-date' && nth === 1
        ? { status: 429, headers: { 'retry-after': inAnHour } }
        : { status: 204 },
    );
    const { deliveryId } = await deliverOne('/retry-date', {
      WEBHOOK_RETRY_SCHEDULE: '50ms,400ms',
    });
    expect((await deliveryState(db.pool, deliveryId)).status).toBe('delivered');
    // Waited out the 400 ms cap (less the DB/host clock skew), far from the hour asked.
    expect(gapMs('/retry-date')).toBeGreaterThanOrEqual(350);
    expect(gapMs('/retry-date')).toBeLessThan(15_000);
  });

  it('when every attempt fails, then after the last step the delivery fails and an endpoint failing for longer than the schedule is disabled with its pending deliveries', async () => {
    receiver.respond(() => ({ status: 500 }));
    const endpoint = await insertEndpoint(db.pool, merchantId, receiver.url('/down'));
    // Failing since an hour ago, far beyond the 300 ms schedule.
    await db.pool.query(
      `UPDATE webhook_endpoints SET failing_since = now() - interval '1 hour' WHERE id = $1`,
      [endpoint.id],
    );
    const first = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [
      endpoint.id,
    ]);
    const later = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.failed', [
      endpoint.id,
    ]);
    const laterId = later.deliveries.get(endpoint.id) ?? '';
    // The later one is not due for a day: it is pending when the endpoint is disabled.
    await db.pool.query(
      `UPDATE webhook_delivery_jobs SET next_attempt_at = now() + interval '1 day'
        WHERE delivery_id = $1`,
      [laterId],
    );
    // A second endpoint that started failing just now (failing_since in the future stands in
    // for "recently"): exhausted, but not disabled.
    const recent = await insertEndpoint(db.pool, merchantId, receiver.url('/down-recent'));
    await db.pool.query(
      `UPDATE webhook_endpoints SET failing_since = now() + interval '1 hour' WHERE id = $1`,
      [recent.id],
    );
    const recentEvent = await queueEvent(db.pool, merchantId, randomUUID(), 'payment.settled', [
      recent.id,
    ]);
    const firstId = first.deliveries.get(endpoint.id) ?? '';
    const recentId = recentEvent.deliveries.get(recent.id) ?? '';
    const { lines, logger } = capturedLogger();
    const delivery = startTestDelivery(db, {}, logger);
    try {
      await vi.waitFor(async () => {
        expect((await deliveryState(db.pool, firstId)).status).toBe('failed');
        expect((await deliveryState(db.pool, recentId)).status).toBe('failed');
      }, until);
    } finally {
      await delivery.stop();
    }
    expect(await deliveryState(db.pool, firstId)).toMatchObject({
      failed_reason: 'attempts_exhausted',
      attempts: 4,
      last_status_code: 500,
      job: false,
    });
    expect(receiver.at('/down')).toHaveLength(4);
    expect(await endpointState(db.pool, endpoint.id)).toMatchObject({ disabled_reason: 'failing' });
    expect(await deliveryState(db.pool, laterId)).toMatchObject({
      status: 'failed',
      failed_reason: 'endpoint_disabled',
      attempts: 0,
      job: false,
    });
    expect(await deliveryState(db.pool, recentId)).toMatchObject({
      failed_reason: 'attempts_exhausted',
    });
    expect(await endpointState(db.pool, recent.id)).toMatchObject({ disabled_reason: null });
    // Each give-up is logged (at debug level everything is), never with a secret.
    expect(lines.filter((line) => line.delivery_id === firstId).map((line) => line.msg)).toContain(
      'webhook attempts exhausted; given up',
    );
    const logged = JSON.stringify(lines);
    for (const secret of [endpoint.secret, recent.secret]) {
      expect(logged).not.toContain(secret.slice('whsec_'.length));
    }
  });

  it('when the endpoint resolves to loopback and no allowlist allows it, then no connection is made and each attempt records the refusal', async () => {
    receiver.respond(() => ({ status: 204 }));
    const overrides = { WEBHOOK_ALLOWED_NETWORKS: '' };
    // The first URL names the host (vetted by the connect-time lookup), the second is an IP.
    const byName = await deliverOne('/refused-name', overrides, 'localhost');
    const byLiteral = await deliverOne('/refused-literal', overrides);
    for (const { deliveryId } of [byName, byLiteral]) {
      expect(await deliveryState(db.pool, deliveryId)).toMatchObject({
        status: 'failed',
        failed_reason: 'attempts_exhausted',
        attempts: 4,
        last_status_code: null,
      });
      const attempts = await attemptRows(db.pool, deliveryId);
      expect(attempts).toHaveLength(4);
      for (const attempt of attempts) expect(attempt.error).toMatch(/a loopback address/);
    }
    expect(receiver.at('/refused-name')).toHaveLength(0);
    expect(receiver.at('/refused-literal')).toHaveLength(0);
  });
});
