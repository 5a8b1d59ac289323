import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { getJson, send, startTestApi, type Answer, type TestApi } from '../support/test-api.js';

// An endpoint's deliveries (list, get, retry) and replay, against the API logged in as
// payments_api. Events, deliveries, attempts and jobs are seeded as the owner, as the fan-out
// and the delivery worker would write them.

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let merchantId: string;
let otherKey: string;

const MAX_REPLAY = 3;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, {
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
    WEBHOOK_REPLAY_MAX_EVENTS: String(MAX_REPLAY),
  });
  await defineTier(db.pool, BENCH_TIER);
  ({ apiKey, id: merchantId } = await api.merchant('Webhook merchant', BENCH_TIER.name));
  ({ apiKey: otherKey } = await api.merchant('Other merchant', BENCH_TIER.name));
});

afterAll(async () => {
  await api.close();
  await db.drop();
});

async function post(path: string, key: string, body: unknown, idem?: string): Promise<Answer> {
  const res = await fetch(api.url(path), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(idem === undefined ? {} : { 'idempotency-key': idem }),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
  };
}

async function newEndpoint(enabledEvents: string[] = ['*']): Promise<string> {
  const res = await post('/webhook_endpoints', apiKey, {
    url: 'http://127.0.0.1:9/hooks',
    enabled_events: enabledEvents,
  });
  expect(res.status).toBe(201);
  return res.json.id as string;
}

/** A stored event of the merchant, `minutesAgo` old. */
async function seedEvent(type: string, minutesAgo: number, paymentId = randomUUID()) {
  const eventId = randomUUID();
  await db.pool.query(
    `INSERT INTO webhook_events (event_id, merchant_id, payment_id, event_type, body, created_at)
     VALUES ($1, $2, $3, $4, '{}', now() - make_interval(mins => $5))`,
    [eventId, merchantId, paymentId, type, minutesAgo],
  );
  return { eventId, paymentId };
}

/** A delivery of the event to the endpoint in `status`, with its job while pending. */
async function seedDelivery(
  endpointId: string,
  event: { eventId: string; paymentId: string },
  status: 'pending' | 'delivered' | 'failed',
  createdMinutesAgo: number,
): Promise<string> {
  const { rows } = await db.pool.query<{ id: string; seq: string }>(
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, payment_id, status, attempts,
       delivered_at, failed_reason, created_at)
     VALUES ($1, $2, $3, $4, CASE WHEN $4 = 'pending' THEN 0 ELSE 2 END,
       CASE WHEN $4 = 'delivered' THEN now() END,
       CASE WHEN $4 = 'failed' THEN 'attempts_exhausted' END,
       now() - make_interval(mins => $5))
     RETURNING id, seq`,
    [endpointId, event.eventId, event.paymentId, status, createdMinutesAgo],
  );
  const row = rows[0];
  if (!row) throw new Error('no delivery');
  if (status === 'pending') {
    await db.pool.query(
      `INSERT INTO webhook_delivery_jobs (delivery_id, endpoint_id, payment_id, seq, attempts,
         next_attempt_at)
       VALUES ($1, $2, $3, $4, 3, now() + interval '1 hour')`,
      [row.id, endpointId, event.paymentId, row.seq],
    );
  }
  return row.id;
}

async function jobOf(deliveryId: string) {
  const { rows } = await db.pool.query<{ attempts: number; due_in_s: number; seq: string }>(
    `SELECT j.attempts, extract(epoch FROM j.next_attempt_at - now())::float AS due_in_s, j.seq
       FROM webhook_delivery_jobs j WHERE delivery_id = $1`,
    [deliveryId],
  );
  return rows[0] ?? null;
}

describe('GET /webhook_endpoints/{id}/deliveries', () => {
  it('when listed, then newest first with the delivery fields, filtered by status and paginated', async () => {
    const endpointId = await newEndpoint();
    const settled = await seedEvent('payment.settled', 30);
    const failed = await seedEvent('payment.failed', 20);
    const refund = await seedEvent('refund.succeeded', 10);
    const d1 = await seedDelivery(endpointId, settled, 'delivered', 30);
    const d2 = await seedDelivery(endpointId, failed, 'failed', 20);
    const d3 = await seedDelivery(endpointId, refund, 'pending', 10);
    await db.pool.query(
      `UPDATE webhook_deliveries SET last_attempt_at = now(), last_status_code = 500,
         last_latency_ms = 12, last_error = 'HTTP 500' WHERE id = $1`,
      [d2],
    );

    const all = await getJson(api, `/webhook_endpoints/${endpointId}/deliveries`, apiKey);
    expect(all.status).toBe(200);
    const data = all.json.data as Record<string, unknown>[];
    expect(data.map((d) => d.id)).toEqual([d3, d2, d1]);
    expect(all.json.has_more).toBe(false);
    expect(data[1]).toEqual({
      id: d2,
      object: 'webhook_delivery',
      endpoint_id: endpointId,
      event_id: failed.eventId,
      event_type: 'payment.failed',
      payment_id: failed.paymentId,
      status: 'failed',
      attempts: 2,
      last_attempt_at: expect.stringMatching(/Z$/) as unknown,
      last_status_code: 500,
      last_latency_ms: 12,
      last_error: 'HTTP 500',
      next_attempt_at: null,
      delivered_at: null,
      failed_reason: 'attempts_exhausted',
      created_at: expect.stringMatching(/Z$/) as unknown,
    });
    expect(data[0]?.next_attempt_at).toEqual(expect.stringMatching(/Z$/));
    expect(data[2]?.delivered_at).toEqual(expect.stringMatching(/Z$/));

    const pending = await getJson(
      api,
      `/webhook_endpoints/${endpointId}/deliveries?status=pending`,
      apiKey,
    );
    expect((pending.json.data as { id: string }[]).map((d) => d.id)).toEqual([d3]);
    const page1 = await getJson(api, `/webhook_endpoints/${endpointId}/deliveries?limit=2`, apiKey);
    expect((page1.json.data as { id: string }[]).map((d) => d.id)).toEqual([d3, d2]);
    expect(page1.json.has_more).toBe(true);
    const page2 = await getJson(
      api,
      `/webhook_endpoints/${endpointId}/deliveries?limit=2&starting_after=${d2}`,
      apiKey,
    );
    expect((page2.json.data as { id: string }[]).map((d) => d.id)).toEqual([d1]);
    expect(page2.json.has_more).toBe(false);

    const badStatus = await getJson(
      api,
      `/webhook_endpoints/${endpointId}/deliveries?status=lost`,
      apiKey,
    );
    expect(badStatus.status).toBe(400);
    expect(badStatus.json.code).toBe('validation_failed');
    const badCursor = await getJson(
      api,
      `/webhook_endpoints/${endpointId}/deliveries?starting_after=${randomUUID()}`,
      apiKey,
    );
    expect(badCursor.status).toBe(400);
    const foreign = await getJson(api, `/webhook_endpoints/${endpointId}/deliveries`, otherKey);
    expect(foreign.status).toBe(404);
    expect(foreign.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('when one delivery is asked for, then it comes with its attempt history, oldest first; another merchant gets 404', async () => {
    const endpointId = await newEndpoint();
    const event = await seedEvent('payment.settled', 5);
    const id = await seedDelivery(endpointId, event, 'pending', 5);
    await db.pool.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, started_at, status_code, latency_ms, error)
       VALUES ($1, now() - interval '2 minutes', NULL, 10000, 'timeout after 10000 ms'),
              ($1, now() - interval '1 minute', 503, 40, 'HTTP 503')`,
      [id],
    );
    const res = await getJson(api, `/webhook_endpoints/${endpointId}/deliveries/${id}`, apiKey);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id, object: 'webhook_delivery', status: 'pending' });
    expect(res.json.attempt_history).toEqual([
      {
        started_at: expect.stringMatching(/Z$/) as unknown,
        status_code: null,
        latency_ms: 10000,
        error: 'timeout after 10000 ms',
      },
      {
        started_at: expect.stringMatching(/Z$/) as unknown,
        status_code: 503,
        latency_ms: 40,
        error: 'HTTP 503',
      },
    ]);
    expect(
      (await getJson(api, `/webhook_endpoints/${endpointId}/deliveries/${id}`, otherKey)).status,
    ).toBe(404);
    const elsewhere = await newEndpoint();
    expect(
      (await getJson(api, `/webhook_endpoints/${elsewhere}/deliveries/${id}`, apiKey)).status,
    ).toBe(404);
    expect(
      (await getJson(api, `/webhook_endpoints/${endpointId}/deliveries/nope`, apiKey)).status,
    ).toBe(404);
  });
});

describe('POST /webhook_endpoints/{id}/deliveries/{delivery_id}/retry', () => {
  it('when a failed delivery is retried, then 202 pending with a job due now; a pending one is made due now with its attempts kept', async () => {
    const endpointId = await newEndpoint();
    const failedEvent = await seedEvent('payment.failed', 5);
    const failed = await seedDelivery(endpointId, failedEvent, 'failed', 5);
    const res = await post(
      `/webhook_endpoints/${endpointId}/deliveries/${failed}/retry`,
      apiKey,
      {},
    );
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({
      id: failed,
      event_id: failedEvent.eventId,
      status: 'pending',
      failed_reason: null,
      next_attempt_at: expect.stringMatching(/Z$/) as unknown,
    });
    const job = await jobOf(failed);
    expect(job?.due_in_s).toBeLessThanOrEqual(1);
    const { rows } = await db.pool.query<{ seq: string }>(
      'SELECT seq FROM webhook_deliveries WHERE id = $1',
      [failed],
    );
    expect(job?.seq).toBe(rows[0]?.seq);

    const pendingEvent = await seedEvent('payment.settled', 4);
    const pending = await seedDelivery(endpointId, pendingEvent, 'pending', 4);
    expect((await jobOf(pending))?.due_in_s).toBeGreaterThan(3000);
    const again = await post(
      `/webhook_endpoints/${endpointId}/deliveries/${pending}/retry`,
      apiKey,
      {},
    );
    expect(again.status).toBe(202);
    const moved = await jobOf(pending);
    expect(moved?.due_in_s).toBeLessThanOrEqual(1);
    expect(moved?.attempts).toBe(3);

    expect(
      (await post(`/webhook_endpoints/${endpointId}/deliveries/${failed}/retry`, otherKey, {}))
        .status,
    ).toBe(404);
    expect(
      (await post(`/webhook_endpoints/${endpointId}/deliveries/${randomUUID()}/retry`, apiKey, {}))
        .status,
    ).toBe(404);
  });

  it('when the endpoint is disabled, then 409 and the delivery stays as it was', async () => {
    const endpointId = await newEndpoint();
    const event = await seedEvent('payment.failed', 5);
    const failed = await seedDelivery(endpointId, event, 'failed', 5);
    expect(
      (await send(api, 'PATCH', `/webhook_endpoints/${endpointId}`, apiKey, { disabled: true }))
        .status,
    ).toBe(200);
    const res = await post(
      `/webhook_endpoints/${endpointId}/deliveries/${failed}/retry`,
      apiKey,
      {},
    );
    expect(res.status).toBe(409);
    expect(res.json.code).toBe('webhook_endpoint_disabled');
    const { rows } = await db.pool.query<{ status: string }>(
      'SELECT status FROM webhook_deliveries WHERE id = $1',
      [failed],
    );
    expect(rows[0]?.status).toBe('failed');
    expect(await jobOf(failed)).toBeNull();
  });
});

describe('POST /webhook_endpoints/{id}/replay', () => {
  it('when replayed, then the subscribed events since `since` are queued oldest first, at most the max; the same key queues nothing more', async () => {
    // Only this test's events (the earlier tests' events are the same merchant's).
    await db.pool.query('DELETE FROM webhook_events');
    const endpointId = await newEndpoint(['payment.settled', 'payment.failed']);
    const paymentId = randomUUID();
    const old = await seedEvent('payment.settled', 120, paymentId); // before `since`
    const e1 = await seedEvent('payment.settled', 50, paymentId);
    const refund = await seedEvent('refund.succeeded', 45); // not subscribed
    const e2 = await seedEvent('payment.failed', 40);
    const e3 = await seedEvent('payment.settled', 30);
    const e4 = await seedEvent('payment.failed', 20);
    // e1 was delivered before: its row goes back to pending (same id, a new seq in event order).
    const delivered = await seedDelivery(endpointId, e1, 'delivered', 50);
    const { rows: before } = await db.pool.query<{ seq: string }>(
      'SELECT seq FROM webhook_deliveries WHERE id = $1',
      [delivered],
    );
    const since = new Date(Date.now() - 60 * 60_000).toISOString();

    const first = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      apiKey,
      { since },
      'replay-1',
    );
    expect(first.status).toBe(202);
    expect(first.json).toEqual({
      object: 'webhook_replay',
      replayed: MAX_REPLAY,
      has_more: true,
      next_since: expect.stringMatching(/Z$/) as unknown,
    });
    const queued = async () =>
      (
        await db.pool.query<{
          event_id: string;
          status: string;
          id: string;
          seq: string;
          job: boolean;
        }>(
          `SELECT d.event_id, d.status, d.id, d.seq, j.delivery_id IS NOT NULL AS job
             FROM webhook_deliveries d LEFT JOIN webhook_delivery_jobs j ON j.delivery_id = d.id
            WHERE d.endpoint_id = $1 ORDER BY d.seq`,
          [endpointId],
        )
      ).rows;
    const afterFirst = await queued();
    expect(afterFirst.map((d) => [d.event_id, d.status, d.job])).toEqual([
      [e1.eventId, 'pending', true],
      [e2.eventId, 'pending', true],
      [e3.eventId, 'pending', true],
    ]);
    expect(afterFirst[0]).toMatchObject({ id: delivered });
    expect(BigInt(afterFirst[0]?.seq ?? 0)).toBeGreaterThan(BigInt(before[0]?.seq ?? 0));
    expect(afterFirst.map((d) => d.event_id)).not.toContain(old.eventId);
    expect(afterFirst.map((d) => d.event_id)).not.toContain(refund.eventId);

    // The same key: the same answer, nothing more queued.
    await db.pool.query(
      `UPDATE webhook_deliveries SET status = 'delivered' WHERE endpoint_id = $1`,
      [endpointId],
    );
    await db.pool.query(`DELETE FROM webhook_delivery_jobs WHERE endpoint_id = $1`, [endpointId]);
    const again = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      apiKey,
      { since },
      'replay-1',
    );
    expect(again.status).toBe(202);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await queued()).every((d) => d.status === 'delivered' && !d.job)).toBe(true);
    const reused = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      apiKey,
      { since: first.json.next_since },
      'replay-1',
    );
    expect(reused.status).toBe(422);
    expect(reused.json.code).toBe('idempotency_key_reused');

    // The next page from next_since (the first event not replayed): e4.
    const next = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      apiKey,
      { since: first.json.next_since },
      'replay-2',
    );
    expect(next.json).toEqual({
      object: 'webhook_replay',
      replayed: 1,
      has_more: false,
      next_since: null,
    });
    const pendingNow = (await queued())
      .filter((d) => d.status === 'pending')
      .map((d) => d.event_id);
    expect(pendingNow).toEqual([e4.eventId]);

    // Deleting the endpoint takes its deliveries, their jobs and attempts with it.
    const deleted = await send(api, 'DELETE', `/webhook_endpoints/${endpointId}`, apiKey);
    expect(deleted.status).toBe(200);
    expect(await queued()).toEqual([]);
    const jobs = await db.pool.query('SELECT 1 FROM webhook_delivery_jobs WHERE endpoint_id = $1', [
      endpointId,
    ]);
    expect(jobs.rowCount).toBe(0);
  });

  it("when an endpoint switched to * is replayed, then a payment's events are queued in event order: the settled one (never sent) before the refund it had already", async () => {
    await db.pool.query('DELETE FROM webhook_events'); // only this test's events
    const endpointId = await newEndpoint(['refund.succeeded']);
    const paymentId = randomUUID();
    const settled = await seedEvent('payment.settled', 20, paymentId);
    const refunded = await seedEvent('refund.succeeded', 10, paymentId);
    await seedDelivery(endpointId, refunded, 'delivered', 10);
    const patched = await send(api, 'PATCH', `/webhook_endpoints/${endpointId}`, apiKey, {
      enabled_events: ['*'],
    });
    expect(patched.status, patched.text).toBe(200);
    const since = new Date(Date.now() - 30 * 60_000).toISOString();
    const until = new Date(Date.now() - 5 * 60_000).toISOString();
    const replay = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      apiKey,
      { since, until },
      'replay-order',
    );
    expect(replay.status, replay.text).toBe(202);
    // The claim sends a payment's deliveries to an endpoint in job seq order (DESIGN 91).
    const { rows } = await db.pool.query<{ event_id: string }>(
      `SELECT d.event_id FROM webhook_delivery_jobs j JOIN webhook_deliveries d ON d.id = j.delivery_id
        WHERE j.endpoint_id = $1 AND j.payment_id = $2 ORDER BY j.seq`,
      [endpointId, paymentId],
    );
    expect(rows.map((r) => r.event_id)).toEqual([settled.eventId, refunded.eventId]);
  });

  it('when the key is missing, the body invalid, the endpoint foreign or disabled, then problem+json and nothing is queued', async () => {
    const endpointId = await newEndpoint();
    await seedEvent('payment.settled', 5);
    const since = new Date(Date.now() - 60 * 60_000).toISOString();
    const count = async () =>
      (
        await db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1',
          [endpointId],
        )
      ).rows[0]?.n;
    const noKey = await post(`/webhook_endpoints/${endpointId}/replay`, apiKey, { since });
    expect(noKey.status).toBe(400);
    expect(noKey.json.code).toBe('idempotency_key_missing');
    const badSince = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      apiKey,
      { since: 'yesterday' },
      'k-a',
    );
    expect(badSince.status).toBe(400);
    expect((badSince.json.errors as { path: string }[])[0]?.path).toBe('since');
    const badUntil = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      apiKey,
      { since, until: since },
      'k-b',
    );
    expect(badUntil.status).toBe(400);
    const foreign = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      otherKey,
      { since },
      'k-c',
    );
    expect(foreign.status).toBe(404);
    await send(api, 'PATCH', `/webhook_endpoints/${endpointId}`, apiKey, { disabled: true });
    const disabled = await post(
      `/webhook_endpoints/${endpointId}/replay`,
      apiKey,
      { since },
      'k-d',
    );
    expect(disabled.status).toBe(409);
    expect(disabled.json.code).toBe('webhook_endpoint_disabled');
    expect(await count()).toBe(0);
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM idempotency_keys WHERE idempotency_key LIKE 'k-%'`,
    );
    expect(rows[0]?.n).toBe(0);
  });

  it('when the same replay is sent many times at once, then every answer is the same and each event is queued once', async () => {
    await db.pool.query('DELETE FROM webhook_events');
    const endpointId = await newEndpoint();
    await seedEvent('payment.settled', 10);
    await seedEvent('refund.failed', 5);
    const since = new Date(Date.now() - 60 * 60_000).toISOString();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        post(`/webhook_endpoints/${endpointId}/replay`, apiKey, { since }, 'replay-burst'),
      ),
    );
    const settled = answers.filter((a) => a.status === 202);
    // A twin still in flight may be answered 409 idempotency_key_in_use; none is anything else.
    for (const a of answers.filter((x) => x.status !== 202)) {
      expect(a.json.code).toBe('idempotency_key_in_use');
    }
    expect(settled.length).toBeGreaterThan(0);
    expect(new Set(settled.map((a) => a.text)).size).toBe(1);
    expect(settled[0]?.json).toEqual({
      object: 'webhook_replay',
      replayed: 2,
      has_more: false,
      next_since: null,
    });
    const { rows } = await db.pool.query<{ deliveries: number; jobs: number }>(
      `SELECT (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1)::int AS deliveries,
              (SELECT count(*) FROM webhook_delivery_jobs WHERE endpoint_id = $1)::int AS jobs`,
      [endpointId],
    );
    expect(rows[0]).toEqual({ deliveries: 2, jobs: 2 });
  });
});
