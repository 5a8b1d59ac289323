import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createResponseCache } from '../../src/idempotency/response-cache.js';
import { paymentEventId } from '../../src/payments/payment-event-id.js';
import {
  createTestDatabase,
  deleteKeysWithPrefix,
  type TestDatabase,
} from '../support/isolation.js';
import {
  countWrites,
  getJson,
  postPayment,
  startTestApi,
  type TestApi,
} from '../support/test-api.js';

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
let merchantId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  ({ apiKey, id: merchantId } = await api.merchant());
});
const flushCache = () =>
  deleteKeysWithPrefix(api.platform.redis, api.platform.config.REDIS_KEY_PREFIX);

afterAll(async () => {
  await api.close();
  await db.drop();
});

const body = {
  amount: 4200,
  currency: 'EUR',
  description: 'Order 42',
  metadata: { order_id: '42', channel: 'web' },
};

describe('POST /payments', () => {
  it('when a key is new, then 202 with the payment, its Location, and one payment + outbox row', async () => {
    const res = await postPayment(api, { apiKey, key: 'new-1', body });
    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    const id = res.json.id as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.headers.get('location')).toBe(`/payments/${id}`);
    expect(res.json).toEqual({
      id,
      object: 'payment',
      amount: 4200,
      currency: 'EUR',
      status: 'pending',
      source: 'tok_visa',
      description: 'Order 42',
      metadata: { order_id: '42', channel: 'web' },
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) as unknown,
    });

    const payment = await db.pool.query('SELECT amount, status FROM payments WHERE id = $1', [id]);
    expect(payment.rows).toEqual([{ amount: '4200', status: 'pending' }]);
    const outbox = await db.pool.query<{ event_id: string; event_type: string; data: unknown }>(
      'SELECT event_id, event_type, data FROM outbox WHERE aggregate_id = $1',
      [id],
    );
    expect(outbox.rows).toEqual([
      {
        event_id: paymentEventId(id, 'payment.created'),
        event_type: 'payment.created',
        data: res.json,
      },
    ]);
  });

  it('when the same request is retried, then the stored response is replayed byte for byte', async () => {
    const first = await postPayment(api, { apiKey, key: 'replay-1', body });
    const second = await postPayment(api, { apiKey, key: 'replay-1', body });
    expect(second.status).toBe(202);
    expect(second.text).toBe(first.text);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('location')).toBe(first.headers.get('location'));
    const { rows } = await db.pool.query(
      `SELECT 1 FROM idempotency_keys WHERE idempotency_key = 'replay-1'`,
    );
    expect(rows).toHaveLength(1);
  });

  it('when the cache is flushed, then the replay comes from the database, still identical', async () => {
    const first = await postPayment(api, { apiKey, key: 'flushed-1', body });
    // Read through the service's own cache, so the check follows wherever it keeps entries.
    const cache = createResponseCache(api.platform.redis, api.platform.config.REDIS_KEY_PREFIX);
    await expect.poll(() => cache.get(merchantId, 'flushed-1')).not.toBeNull();
    await flushCache();
    expect(await cache.get(merchantId, 'flushed-1')).toBeNull(); // the database is all that is left
    const second = await postPayment(api, { apiKey, key: 'flushed-1', body });
    expect(second.status).toBe(202);
    expect(second.text).toBe(first.text);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });

  it('when the retry has the same fields in another order and spacing, then it is a replay', async () => {
    const first = await postPayment(api, { apiKey, key: 'reorder-1', body });
    const reordered = `{ "metadata": {"channel":"web", "order_id":"42"},
      "currency":"EUR",   "description":"Order 42", "amount": 4200 }`;
    const second = await postPayment(api, { apiKey, key: 'reorder-1', rawBody: reordered });
    expect(second.status).toBe(202);
    expect(second.text).toBe(first.text);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });

  it('when the key was used with another amount, then 422 and nothing is written', async () => {
    const first = await postPayment(api, { apiKey, key: 'reuse-1', body });
    const before = await countWrites(db);
    await flushCache(); // the database path must say 422 too
    for (const attempt of [1, 2]) {
      const res = await postPayment(api, {
        apiKey,
        key: 'reuse-1',
        body: { ...body, amount: 4201 },
      });
      expect(res.status, `attempt ${attempt}`).toBe(422);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.json.code).toBe('idempotency_key_reused');
    }
    expect(await countWrites(db)).toEqual(before);
    const original = await getJson(api, `/payments/${first.json.id as string}`, apiKey);
    expect(original.json.amount).toBe(4200);
  });

  it('when the key is sent in quoted structured-field form, then it is the same key', async () => {
    const bare = await postPayment(api, { apiKey, key: 'quoted-1', body });
    const quoted = await postPayment(api, { apiKey, key: '"quoted-1"', body });
    expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    expect(quoted.json.id).toBe(bare.json.id);
  });

  it('when source is left out, then it equals sending the default explicitly', async () => {
    const implicit = await postPayment(api, { apiKey, key: 'default-1', body });
    const explicit = await postPayment(api, {
      apiKey,
      key: 'default-1',
      body: { ...body, source: 'tok_visa' },
    });
    expect(explicit.status).toBe(202);
    expect(explicit.json.id).toBe(implicit.json.id);
  });

  it('when two merchants use the same key, then each gets its own payment and sees only it', async () => {
    const other = await api.merchant('Other merchant');
    const mine = await postPayment(api, { apiKey, key: 'shared-key', body });
    const theirs = await postPayment(api, { apiKey: other.apiKey, key: 'shared-key', body });
    expect(mine.status).toBe(202);
    expect(theirs.status).toBe(202);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.json.id).not.toBe(mine.json.id);

    // Same key, different body: for the other merchant it is its own key, not a 422.
    const otherBody = await postPayment(api, {
      apiKey: other.apiKey,
      key: 'shared-key-2',
      body: { ...body, amount: 1 },
    });
    const mineBody = await postPayment(api, { apiKey, key: 'shared-key-2', body });
    expect([otherBody.status, mineBody.status]).toEqual([202, 202]);

    const foreign = await getJson(api, `/payments/${mine.json.id as string}`, other.apiKey);
    expect(foreign.status).toBe(404);
    const list = await getJson(api, '/payments?limit=100', other.apiKey);
    const ids = (list.json.data as { id: string }[]).map((p) => p.id);
    expect(ids).toContain(theirs.json.id);
    expect(ids).not.toContain(mine.json.id);
  });
});
