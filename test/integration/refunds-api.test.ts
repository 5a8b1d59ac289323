import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { refundEventId } from '../../src/refunds/refund-event-id.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, refundFacts, settledPayment } from '../support/refund-client.js';
import { getJson, postPayment, startTestApi, type TestApi } from '../support/test-api.js';

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let otherKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  // A wide tier: the concurrency tests send hundreds of requests at once.
  await defineTier(db.pool, BENCH_TIER);
  ({ apiKey } = await api.merchant('Test merchant', BENCH_TIER.name));
  ({ apiKey: otherKey } = await api.merchant('Other merchant', BENCH_TIER.name));
});

afterAll(async () => {
  await api.close();
  await db.drop();
});

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('POST /payments/{id}/refunds', () => {
  it('when the payment is settled, then 202 with the pending refund, its Location, job and refund.created event in one go', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    const res = await postRefund(api, {
      apiKey,
      paymentId,
      body: { amount: 300, reason: 'requested_by_customer', metadata: { ticket: 'T-1' } },
    });
    expect(res.status).toBe(202);
    const id = res.json.id as string;
    expect(id).toMatch(UUID7);
    expect(res.headers.get('location')).toBe(`/refunds/${id}`);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(res.json).toEqual({
      id,
      object: 'refund',
      payment_id: paymentId,
      amount: 300,
      currency: 'EUR',
      status: 'pending',
      reason: 'requested_by_customer',
      metadata: { ticket: 'T-1' },
      created_at: expect.stringMatching(/Z$/) as unknown,
    });
    const outbox = await db.pool.query<{ event_id: string; aggregate_id: string; data: unknown }>(
      `SELECT event_id, aggregate_id, data FROM outbox WHERE event_type = 'refund.created'
        AND data->>'id' = $1`,
      [id],
    );
    expect(outbox.rows).toEqual([
      { event_id: refundEventId(id, 'refund.created'), aggregate_id: paymentId, data: res.json },
    ]);
    const jobs = await db.pool.query('SELECT state FROM refund_jobs WHERE refund_id = $1', [id]);
    expect(jobs.rows).toEqual([{ state: 'pending' }]);
    const payment = await getJson(api, `/payments/${paymentId}`, apiKey);
    expect(payment.json).toMatchObject({ amount_refunded: 300, refunded: false });
  });

  it('when the amount is left out, then what is left is refunded, and the payment reads refunded', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    expect((await postRefund(api, { apiKey, paymentId, body: { amount: 400 } })).status).toBe(202);
    const rest = await postRefund(api, { apiKey, paymentId, body: {} });
    expect(rest.status).toBe(202);
    expect(rest.json).toMatchObject({ amount: 600, reason: null, metadata: {} });
    const payment = await getJson(api, `/payments/${paymentId}`, apiKey);
    expect(payment.json).toMatchObject({ amount_refunded: 1000, refunded: true });
    const none = await postRefund(api, { apiKey, paymentId, body: {} });
    expect(none.status).toBe(422);
    expect(none.json).toMatchObject({ code: 'refund_exceeds_payment' });
  });

  it('when the refund exceeds what is left, then 422 refund_exceeds_payment and nothing is written', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    const res = await postRefund(api, { apiKey, paymentId, body: { amount: 1001 } });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.json).toMatchObject({ code: 'refund_exceeds_payment', status: 422 });
    expect(await refundFacts(db, paymentId)).toMatchObject({ amount_refunded: 0, refunds: 0 });
  });

  it.each(['pending', 'processing', 'failed'])(
    'when the payment is %s, then 422 payment_not_refundable and nothing is written',
    async (status) => {
      const paymentId = await settledPayment(api, db, apiKey);
      await db.pool.query(`UPDATE payments SET status = $2, failure_code = $3 WHERE id = $1`, [
        paymentId,
        status,
        status === 'failed' ? 'card_declined' : null,
      ]);
      const res = await postRefund(api, { apiKey, paymentId, body: { amount: 1 } });
      expect(res.status).toBe(422);
      expect(res.json).toMatchObject({ code: 'payment_not_refundable' });
      expect(await refundFacts(db, paymentId)).toMatchObject({ amount_refunded: 0, refunds: 0 });
    },
  );

  it('when the payment is unknown, foreign or malformed, then 404', async () => {
    const paymentId = await settledPayment(api, db, apiKey);
    for (const [key, id] of [
      [otherKey, paymentId],
      [apiKey, '0190a8a0-0000-7000-8000-000000000000'],
      [apiKey, 'not-a-uuid'],
    ] as const) {
      const res = await postRefund(api, { apiKey: key, paymentId: id, body: { amount: 1 } });
      expect(res.status).toBe(404);
      expect(res.json).toMatchObject({ code: 'not_found' });
    }
    expect(await refundFacts(db, paymentId)).toMatchObject({ refunds: 0 });
  });

  it('when the body is invalid, then 400 validation_failed with the field', async () => {
    const paymentId = await settledPayment(api, db, apiKey);
    const res = await postRefund(api, {
      apiKey,
      paymentId,
      body: { amount: 0, reason: 'bored', extra: 1 },
    });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'validation_failed' });
    const paths = (res.json.errors as { path: string }[]).map((e) => e.path).sort();
    expect(paths).toEqual(['amount', 'extra', 'reason']);
  });

  it('when the body names the amount twice, then 400 malformed_json and nothing is written', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    const res = await postRefund(api, {
      apiKey,
      paymentId,
      rawBody: '{"amount":100,"amount":1000}',
    });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'malformed_json' });
    expect(res.json.detail).toContain('"amount"');
    expect(await refundFacts(db, paymentId)).toMatchObject({ refunds: 0, amount_refunded: 0 });
  });

  it('when a key is replayed, then the same bytes with Idempotent-Replayed; another body or endpoint is 422', async () => {
    const paymentId = await settledPayment(api, db, apiKey);
    const first = await postRefund(api, { apiKey, paymentId, key: 'r-1', body: { amount: 100 } });
    const again = await postRefund(api, { apiKey, paymentId, key: 'r-1', body: { amount: 100 } });
    expect(again.status).toBe(202);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    const other = await postRefund(api, { apiKey, paymentId, key: 'r-1', body: { amount: 101 } });
    expect(other.status).toBe(422);
    expect(other.json).toMatchObject({ code: 'idempotency_key_reused' });
    // The payments endpoint shares the merchant's key space: the fingerprint differs (path).
    const payment = await postPayment(api, { apiKey, key: 'r-1' });
    expect(payment.status).toBe(422);
    const paid = await postPayment(api, { apiKey, key: 'p-1' });
    const crossed = await postRefund(api, { apiKey, paymentId, key: 'p-1', body: { amount: 1 } });
    expect(paid.status).toBe(202);
    expect(crossed.status).toBe(422);
    expect(crossed.json).toMatchObject({ code: 'idempotency_key_reused' });
    expect(await refundFacts(db, paymentId)).toMatchObject({ refunds: 1, amount_refunded: 100 });
    // Another merchant's identical key is its own.
    const foreign = await postRefund(api, {
      apiKey: otherKey,
      paymentId,
      key: 'r-1',
      body: { amount: 100 },
    });
    expect(foreign.status).toBe(404);
  });
});

describe('the money invariant under concurrency', () => {
  it('when 50 refunds of 10% race with distinct keys, then exactly 10 are accepted and the sum is the amount', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 10_000 });
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        postRefund(api, { apiKey, paymentId, body: { amount: 1_000 } }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(10);
    expect(statuses.filter((s) => s === 422)).toHaveLength(40);
    for (const a of answers.filter((x) => x.status === 422)) {
      expect(a.json).toMatchObject({ code: 'refund_exceeds_payment' });
    }
    expect(await refundFacts(db, paymentId)).toEqual({
      amount: 10_000,
      amount_refunded: 10_000,
      refunds: 10,
      refunded_sum: 10_000,
    });
  });

  it('when each of the 50 is sent 5 times at once, then no extra refund and every replay is identical', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 10_000 });
    const keys = Array.from({ length: 50 }, (_, i) => `storm-${paymentId}-${i}`);
    const answers = await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: 5 }, () =>
          postRefund(api, { apiKey, paymentId, key, body: { amount: 1_000 } }).then((a) => ({
            key,
            ...a,
          })),
        ),
      ),
    );
    expect(await refundFacts(db, paymentId)).toEqual({
      amount: 10_000,
      amount_refunded: 10_000,
      refunds: 10,
      refunded_sum: 10_000,
    });
    const accepted = new Map<string, string>();
    for (const a of answers) {
      // 202 (first or replay), 409 (twin in flight), 422 (exceeds, never stored).
      expect([202, 409, 422]).toContain(a.status);
      if (a.status !== 202) continue;
      const seen = accepted.get(a.key);
      if (seen === undefined) accepted.set(a.key, a.text);
      else expect(a.text).toBe(seen);
    }
    expect(accepted.size).toBe(10);
    const ids = new Set([...accepted.values()].map((t) => (JSON.parse(t) as { id: string }).id));
    expect(ids.size).toBe(10);
    // Replays after the storm: each accepted key answers its refund, byte for byte.
    for (const [key, text] of accepted) {
      const replay = await postRefund(api, { apiKey, paymentId, key, body: { amount: 1_000 } });
      expect(replay.text).toBe(text);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
    }
  });

  it('when code skips the check, then the CHECK constraint still refuses more than the amount', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 100 });
    await expect(
      db.pool.query('UPDATE payments SET amount_refunded = 101 WHERE id = $1', [paymentId]),
    ).rejects.toMatchObject({ code: '23514', constraint: 'payments_refund_within_amount' });
  });
});

describe('GET /refunds/{id} and GET /payments/{id}/refunds', () => {
  it('when the refund is yours, then 200; foreign, unknown or malformed is 404', async () => {
    const paymentId = await settledPayment(api, db, apiKey);
    const created = await postRefund(api, { apiKey, paymentId, body: { amount: 5 } });
    const id = created.json.id as string;
    const mine = await getJson(api, `/refunds/${id}`, apiKey);
    expect(mine.status).toBe(200);
    expect(mine.json).toEqual(created.json);
    for (const [key, path] of [
      [otherKey, `/refunds/${id}`],
      [apiKey, '/refunds/0190a8a0-0000-7000-8000-000000000000'],
      [apiKey, '/refunds/nope'],
      [otherKey, `/payments/${paymentId}/refunds`],
      [apiKey, '/payments/nope/refunds'],
    ] as const) {
      const res = await getJson(api, path, key);
      expect(res.status).toBe(404);
      expect(res.json).toMatchObject({ code: 'not_found' });
    }
  });

  it('when a payment has refunds, then they are listed newest first, page by page', async () => {
    const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await postRefund(api, { apiKey, paymentId, body: { amount: 10 } });
      ids.push(res.json.id as string);
    }
    const first = await getJson(api, `/payments/${paymentId}/refunds?limit=3`, apiKey);
    expect(first.status).toBe(200);
    const firstIds = (first.json.data as { id: string }[]).map((r) => r.id);
    expect(firstIds).toEqual([...ids].reverse().slice(0, 3));
    expect(first.json).toMatchObject({ object: 'list', has_more: true });
    const next = await getJson(
      api,
      `/payments/${paymentId}/refunds?limit=3&starting_after=${firstIds[2] ?? ''}`,
      apiKey,
    );
    expect((next.json.data as { id: string }[]).map((r) => r.id)).toEqual(
      [...ids].reverse().slice(3),
    );
    expect(next.json.has_more).toBe(false);
    const bad = await getJson(
      api,
      `/payments/${paymentId}/refunds?starting_after=0190a8a0-0000-7000-8000-000000000000`,
      apiKey,
    );
    expect(bad.status).toBe(400);
  });
});
