import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

// Refund metadata is the payment's metadata schema (src/http/metadata-schema.ts): text Postgres
// cannot store is refused with 400 before anything is written, never a 500 from the database,
// and a `__proto__` key is refused rather than dropped. Raw JSON text, because \u0000 and a lone
// \ud800 are valid JSON escapes JSON.stringify would not send as such.

let db: TestDatabase;
let api: TestApi;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  await defineTier(db.pool, BENCH_TIER);
  ({ apiKey } = await api.merchant('Hostile refunds', BENCH_TIER.name));
});

afterAll(async () => {
  await api.close();
  await db.drop();
});

/** What a refund request may write: its row, its job, its event and its idempotency key. */
async function written(paymentId: string, key: string): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM refunds WHERE payment_id = $1) AS refunds,
            (SELECT count(*)::int FROM refund_jobs j JOIN refunds r ON r.id = j.refund_id
              WHERE r.payment_id = $1) AS jobs,
            (SELECT count(*)::int FROM outbox WHERE event_type LIKE 'refund.%') AS events,
            (SELECT count(*)::int FROM idempotency_keys WHERE idempotency_key = $2) AS keys`,
    [paymentId, key],
  );
  return rows[0] ?? {};
}

describe('POST /payments/{id}/refunds under hostile metadata', () => {
  it.each([
    ['a NUL in a metadata value', '{"metadata":{"k":"a\\u0000b"}}', 'metadata.k'],
    ['a NUL in a metadata key', '{"metadata":{"k\\u0000":"v"}}', 'metadata.k\u0000'],
    ['a lone surrogate in a metadata value', '{"metadata":{"k":"a\\ud800"}}', 'metadata.k'],
    ['a lone surrogate in a metadata key', '{"metadata":{"\\ud800":"v"}}', 'metadata.\ud800'],
    ['a low surrogate first', '{"metadata":{"k":"\\udc00\\ud800"}}', 'metadata.k'],
    ['a __proto__ metadata key', '{"metadata":{"__proto__":"v"}}', 'metadata.__proto__'],
    ['an empty metadata key', '{"metadata":{"":"v"}}', 'metadata.'],
  ])(
    'when the body has %s, then 400 validation_failed names it and nothing is written',
    async (_case, rawBody, path) => {
      const paymentId = await settledPayment(api, db, apiKey);
      const key = crypto.randomUUID();
      const res = await postRefund(api, { apiKey, paymentId, key, rawBody });
      expect(res.status, res.text).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.json).toMatchObject({ code: 'validation_failed' });
      const errors = res.json.errors as { path: string; message: string }[];
      expect(errors.map((e) => e.path)).toContain(path);
      expect(await written(paymentId, key)).toEqual({ refunds: 0, jobs: 0, events: 0, keys: 0 });
    },
  );

  it('when the messages are compared with a payment’s, then they are the same words', async () => {
    const paymentId = await settledPayment(api, db, apiKey);
    const refund = await postRefund(api, {
      apiKey,
      paymentId,
      rawBody: '{"metadata":{"k":"\\u0000","\\ud800":"v"}}',
    });
    const payment = await fetch(api.url('/payments'), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'idempotency-key': crypto.randomUUID(),
        'content-type': 'application/json',
      },
      body: '{"amount":100,"currency":"EUR","metadata":{"k":"\\u0000","\\ud800":"v"}}',
    });
    expect(payment.status).toBe(400);
    const paymentErrors = ((await payment.json()) as { errors: unknown[] }).errors;
    expect(refund.json.errors).toEqual(paymentErrors);
  });

  it('when metadata keys are constructor and prototype, then the refund stores them faithfully', async () => {
    const paymentId = await settledPayment(api, db, apiKey);
    const metadata = { constructor: 'c', prototype: 'p', toString: 't', emoji: '😀'.repeat(500) };
    const res = await postRefund(api, { apiKey, paymentId, body: { metadata } });
    expect(res.status, res.text).toBe(202);
    expect(res.json.metadata).toEqual(metadata);
  });
});
