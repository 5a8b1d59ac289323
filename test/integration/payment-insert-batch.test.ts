import { createHash } from 'node:crypto';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  insertPaymentOnce,
  type NewPaymentRecord,
} from '../../src/payments/payment-insert-single.js';
import { createPaymentInsertBatcher } from '../../src/payments/payment-insert-batcher.js';
import { createMerchant } from '../../src/merchants/merchant-repository.js';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { postPayment, startTestApi, type Answer, type TestApi } from '../support/test-api.js';

/**
 * Group commit (payment-insert-batcher.ts) against the real database: concurrent new payments
 * share one statement and one transaction, each request keeps its own outcome, and every
 * idempotency rule holds as with one insert per request (I1: one payment per key; I2: the key
 * record, payment and outbox row of a request commit together, in the same transaction).
 */

let db: TestDatabase;
let redisProxy: TcpProxy;
const apis: TestApi[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  // Hundreds of requests at once: this file checks outcomes, not the merchant rate limit.
  await defineTier(db.pool, BENCH_TIER);
  const redisUrl = new URL(testConfig().REDIS_URL);
  redisProxy = await startTcpProxy(redisUrl.hostname, Number(redisUrl.port || 6379));
});
afterAll(async () => {
  await Promise.all(apis.map((api) => api.close()));
  await redisProxy.close();
  await db.drop();
});

function newRecord(merchantId: string, key: string, amount = 1000): NewPaymentRecord {
  const id = uuidv7();
  const createdAt = new Date();
  const data = { id, amount, currency: 'EUR', status: 'pending' };
  return {
    merchantId,
    idempotencyKey: key,
    fingerprint: createHash('sha256').update(key).digest(),
    ttlSeconds: 3600,
    response: { status: 202, body: JSON.stringify(data) },
    payment: {
      id,
      amount,
      currency: 'EUR',
      source: 'tok_visa',
      description: null,
      metadata: { key },
      createdAt,
    },
    event: { id: uuidv7(), type: 'payment.created', topic: 'payments', data },
  };
}

/** Per payment of the merchant: its key, and the transactions its three rows were written in. */
async function writtenRows(merchantId: string) {
  const { rows } = await db.pool.query<{ id: string; key: string; txids: string[] }>(
    `SELECT p.id, k.idempotency_key AS key,
            array[p.xmin::text, k.xmin::text, o.xmin::text] AS txids
       FROM payments p
       JOIN idempotency_keys k ON k.payment_id = p.id
       JOIN outbox o ON o.aggregate_id = p.id AND o.event_type = 'payment.created'
      WHERE p.merchant_id = $1`,
    [merchantId],
  );
  const { rows: counts } = await db.pool.query<{ payments: number; outbox: number }>(
    `SELECT (SELECT count(*)::int FROM payments WHERE merchant_id = $1) AS payments,
            (SELECT count(*)::int FROM outbox o JOIN payments p ON p.id = o.aggregate_id
              WHERE p.merchant_id = $1) AS outbox`,
    [merchantId],
  );
  // Every payment has its key record and its one outbox row (I2): nothing written alone.
  expect(counts[0]).toEqual({ payments: rows.length, outbox: rows.length });
  for (const row of rows) expect(new Set(row.txids).size).toBe(1);
  return rows;
}

describe('the batcher on the real database', () => {
  it('when many requests share a batch, then one transaction writes them all, a duplicated key once', async () => {
    const merchant = await createMerchant(db.pool, 'batch');
    const insert = createPaymentInsertBatcher({
      db: db.login('api'),
      maxRows: 300,
      windowMs: 50,
      inFlight: 0,
    });
    const records = Array.from({ length: 200 }, (_, i) => newRecord(merchant.id, `k-${i}`));
    const twins = [newRecord(merchant.id, 'k-7'), newRecord(merchant.id, 'k-150')];
    const results = await Promise.all([...records, ...twins].map((record) => insert(record)));

    expect(results.slice(0, 200).map((stored) => stored?.paymentId)).toEqual(
      records.map((record) => record.payment.id),
    );
    // The twins found their key taken (the idempotency layer replays or answers 422 then).
    expect(results.slice(200)).toEqual([null, null]);
    const rows = await writtenRows(merchant.id);
    expect(rows).toHaveLength(200);
    expect(new Set(rows.map((row) => row.txids[0])).size).toBe(1);
  });

  it('when a key was committed before, then only that request finds it taken; the others commit', async () => {
    const merchant = await createMerchant(db.pool, 'committed');
    const api = db.login('api');
    const earlier = newRecord(merchant.id, 'taken');
    expect(await insertPaymentOnce(api, earlier)).not.toBeNull();
    const insert = createPaymentInsertBatcher({ db: api, maxRows: 100, windowMs: 50, inFlight: 0 });
    const records = Array.from({ length: 30 }, (_, i) => newRecord(merchant.id, `c-${i}`));
    records.splice(11, 0, newRecord(merchant.id, 'taken'));
    const results = await Promise.all(records.map((record) => insert(record)));

    expect(results.filter((stored) => stored === null)).toHaveLength(1);
    expect(results[11]).toBeNull();
    const rows = await writtenRows(merchant.id);
    expect(rows.find((row) => row.key === 'taken')?.id).toBe(earlier.payment.id);
    expect(rows).toHaveLength(31);
    expect(new Set(rows.filter((r) => r.key !== 'taken').map((r) => r.txids[0])).size).toBe(1);
  });

  it('when one row breaks a constraint, then the batch is retried per request and only it fails', async () => {
    const merchant = await createMerchant(db.pool, 'bad row');
    const insert = createPaymentInsertBatcher({
      db: db.login('api'),
      maxRows: 100,
      windowMs: 50,
      inFlight: 0,
    });
    const records = Array.from({ length: 20 }, (_, i) => newRecord(merchant.id, `b-${i}`));
    records[5] = newRecord(merchant.id, 'b-bad', 0); // amount 0 breaks the CHECK
    const results = await Promise.allSettled(records.map((record) => insert(record)));

    const failed = results.filter((result) => result.status === 'rejected');
    expect(failed).toHaveLength(1);
    expect(results[5]).toMatchObject({ status: 'rejected', reason: { code: '23514' } });
    const rows = await writtenRows(merchant.id);
    expect(rows.map((row) => row.key).sort()).toEqual(
      records
        .filter((_, i) => i !== 5)
        .map((record) => record.idempotencyKey)
        .sort(),
    );
  });

  it('when the statement times out behind a locked key, then the neighbours commit on their own', async () => {
    const merchant = await createMerchant(db.pool, 'timeout');
    const login = new pg.Pool({ connectionString: db.roleUrl('api'), statement_timeout: 300 });
    const blocker = await db.pool.connect();
    try {
      // An uncommitted record of key `locked`: an insert of that key waits for this transaction.
      await blocker.query('BEGIN');
      await blocker.query(
        `INSERT INTO idempotency_keys (merchant_id, idempotency_key, fingerprint, response_status,
                                       response_body, created_at, expires_at)
         VALUES ($1, 'locked', $2, 202, '{}', now(), now() + interval '1 hour')`,
        [merchant.id, Buffer.alloc(32)],
      );
      const insert = createPaymentInsertBatcher({
        db: login,
        maxRows: 100,
        windowMs: 50,
        inFlight: 0,
      });
      const records = Array.from({ length: 10 }, (_, i) => newRecord(merchant.id, `t-${i}`));
      records.push(newRecord(merchant.id, 'locked'));
      const results = await Promise.allSettled(records.map((record) => insert(record)));

      // The batch timed out as a whole; retried alone, only the locked key's request times out.
      expect(results.slice(0, 10).every((result) => result.status === 'fulfilled')).toBe(true);
      expect(results[10]).toMatchObject({ status: 'rejected', reason: { code: '57014' } });
      const rows = await writtenRows(merchant.id);
      expect(rows).toHaveLength(10);
      // Written one transaction each: the batch wrote nothing.
      expect(new Set(rows.map((row) => row.txids[0])).size).toBe(10);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
      await login.end();
    }
  });
});

async function batchingApi(overrides: Record<string, string>): Promise<TestApi> {
  const api = await startTestApi(db, {
    REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
    // Outcomes, not latency: many requests on a loaded machine may outlast the default bounds.
    DATABASE_CONNECT_TIMEOUT_MS: '20000',
    ...overrides,
  });
  apis.push(api);
  return api;
}

const replayed = (answer: Answer) => answer.headers.get('idempotent-replayed') === 'true';

describe('POST /payments with group commit', () => {
  it('when Redis is down, then twins in one batch and committed keys answer as replays or 422', async () => {
    // 26 requests reach the insert: the batch is written when all have arrived.
    const api = await batchingApi({
      PAYMENT_BATCH_MAX_ROWS: '26',
      PAYMENT_BATCH_WINDOW_MS: '1000',
      PAYMENT_BATCH_IN_FLIGHT: '0',
      REQUEST_DEADLINE_MS: '30000',
    });
    const merchant = await api.merchant('batch', BENCH_TIER.name);
    const post = (key: string, amount = 500) =>
      postPayment(api, { apiKey: merchant.apiKey, key, body: { amount, currency: 'EUR' } });
    const committed = await post('committed-a');
    expect((await post('committed-b')).status).toBe(202);
    await redisProxy.stop();
    try {
      const answers = await Promise.all([
        post('twin-same'),
        post('twin-same'),
        post('twin-diff', 500),
        post('twin-diff', 501),
        post('committed-a'),
        post('committed-b', 999),
        ...Array.from({ length: 20 }, (_, i) => post(`fresh-${i}`)),
      ]);
      const [same1, same2, diff1, diff2, again, reused, ...fresh] = answers;
      expect([same1.status, same2.status]).toEqual([202, 202]);
      expect(same1.json.id).toBe(same2.json.id);
      expect([replayed(same1), replayed(same2)].sort()).toEqual([false, true]);
      expect([diff1.status, diff2.status].sort()).toEqual([202, 422]);
      expect([diff1, diff2].find((a) => a.status === 422)?.json.code).toBe(
        'idempotency_key_reused',
      );
      expect(again.status).toBe(202);
      expect(replayed(again)).toBe(true);
      expect(again.text).toBe(committed.text);
      expect(reused.status).toBe(422);
      expect(fresh.every((a) => a.status === 202 && !replayed(a))).toBe(true);
    } finally {
      await redisProxy.start();
    }
    const rows = await writtenRows(merchant.id);
    expect(rows).toHaveLength(2 + 2 + 20);
  });

  it('when Redis works, then 300 concurrent requests commit once per key; twins replay or get 409', async () => {
    // The in-flight rule on (the window-only default is the other cases').
    const api = await batchingApi({ REQUEST_DEADLINE_MS: '30000', PAYMENT_BATCH_IN_FLIGHT: '2' });
    const merchant = await api.merchant('batch', BENCH_TIER.name);
    const keys = [
      ...Array.from({ length: 250 }, (_, i) => `many-${i}`),
      ...Array.from({ length: 50 }, () => 'one'),
    ];
    const answers = await Promise.all(
      keys.map((key) => postPayment(api, { apiKey: merchant.apiKey, key })),
    );
    expect(answers.filter((a) => a.status !== 202 && a.status !== 409)).toEqual([]);
    expect(answers.filter((a) => a.status === 202 && !replayed(a))).toHaveLength(251);
    const rows = await writtenRows(merchant.id);
    expect(rows).toHaveLength(251);
    const byKey = new Map(rows.map((row) => [row.key, row.id]));
    answers.forEach((answer, i) => {
      if (answer.status === 202) expect(answer.json.id).toBe(byKey.get(keys[i] ?? ''));
    });
    // The cache and the lock work as before: a retry of any key is the stored answer.
    const retry = await postPayment(api, { apiKey: merchant.apiKey, key: 'many-3' });
    expect(replayed(retry)).toBe(true);
    expect(retry.text).toBe(answers[3]?.text);
  });

  it("when a batch waits past the requests' deadline, then each answers 503 and its retry finds the write", async () => {
    const api = await batchingApi({
      PAYMENT_BATCH_MAX_ROWS: '5',
      PAYMENT_BATCH_WINDOW_MS: '1000',
      PAYMENT_BATCH_IN_FLIGHT: '0',
      REQUEST_DEADLINE_MS: '300',
    });
    const merchant = await api.merchant('batch', BENCH_TIER.name);
    const blocker = await db.pool.connect();
    const keys = ['late-0', 'late-1', 'late-2', 'late-3', 'late-locked'];
    let answers: Answer[];
    try {
      await blocker.query('BEGIN');
      await blocker.query(
        `INSERT INTO idempotency_keys (merchant_id, idempotency_key, fingerprint, response_status,
                                       response_body, created_at, expires_at)
         VALUES ($1, 'late-locked', $2, 202, '{}', now(), now() + interval '1 hour')`,
        [merchant.id, Buffer.alloc(32)],
      );
      answers = await Promise.all(
        keys.map((key) => postPayment(api, { apiKey: merchant.apiKey, key })),
      );
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    // The locked key's request waited in its batch: the deadline answered it.
    expect(answers[4]?.status).toBe(503);
    expect(answers[4]?.json.code).toBe('service_unavailable');
    // Each neighbour was answered 503 too (same batch) or 202 (a later batch); then all commit.
    expect(answers.every((a) => a.status === 503 || a.status === 202)).toBe(true);
    await expect
      .poll(async () => (await writtenRows(merchant.id)).length, { timeout: 15_000 })
      .toBe(5);
    const rows = await writtenRows(merchant.id);
    for (const key of keys) {
      const retry = await postPayment(api, { apiKey: merchant.apiKey, key });
      expect(retry.status).toBe(202);
      expect(retry.json.id).toBe(rows.find((row) => row.key === key)?.id);
    }
  });
});
