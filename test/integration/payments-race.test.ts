import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/isolation.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import {
  countWrites,
  postPayment,
  startTestApi,
  type Answer,
  type TestApi,
} from '../support/test-api.js';

/**
 * I1 under concurrency: however many identical requests race, and whatever Redis does, one
 * payment and one outbox row exist per (merchant, key). Redis failures are injected with a TCP
 * proxy in front of the shared Redis, so other test files keep theirs.
 */

const N = 100;
const body = { amount: 999, currency: 'USD' };

let db: TestDatabase;
let redisProxy: TcpProxy;
const apis: TestApi[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const redisUrl = new URL(testConfig().REDIS_URL);
  redisProxy = await startTcpProxy(redisUrl.hostname, Number(redisUrl.port || 6379));
});
afterAll(async () => {
  await Promise.all(apis.map((api) => api.close()));
  await redisProxy.close();
  await db.drop();
});

async function apiWith(
  overrides: Record<string, string> = {},
  beforeWrite?: () => Promise<void>,
): Promise<TestApi> {
  const api = await startTestApi(
    db,
    {
      REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
      // This file checks exactly-once, not latency: 100 racers on a loaded 2-core machine may
      // outlast the default request deadline and pool checkout bound (503s are tested elsewhere).
      REQUEST_DEADLINE_MS: '30000',
      DATABASE_CONNECT_TIMEOUT_MS: '20000',
      ...overrides,
    },
    beforeWrite ? { beforeWrite } : {},
  );
  apis.push(api);
  return api;
}

/** Fires `N` identical requests at once (or spread over `spreadMs`) and collects every answer. */
async function race(api: TestApi, apiKey: string, key: string, spreadMs = 0): Promise<Answer[]> {
  return Promise.all(
    Array.from({ length: N }, async (_, i) => {
      if (spreadMs > 0) await new Promise((r) => setTimeout(r, (i * spreadMs) / N));
      return postPayment(api, { apiKey, key, body });
    }),
  );
}

/** The invariant: one payment + one outbox row for the merchant; every 202 names it. */
async function expectExactlyOnePayment(merchantId: string, answers: Answer[]) {
  const { rows } = await db.pool.query<{ id: string }>(
    'SELECT id FROM payments WHERE merchant_id = $1',
    [merchantId],
  );
  expect(rows).toHaveLength(1);
  const paymentId = rows[0]?.id;
  const outbox = await db.pool.query('SELECT 1 FROM outbox WHERE aggregate_id = $1', [paymentId]);
  expect(outbox.rowCount).toBe(1);

  const accepted = answers.filter((a) => a.status === 202);
  expect(answers.filter((a) => a.status !== 202 && a.status !== 409)).toEqual([]);
  expect(new Set(accepted.map((a) => a.json.id))).toEqual(new Set([paymentId]));
  // Exactly one answer created it; every other 202 says it is a replay.
  expect(accepted.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
  for (const conflict of answers.filter((a) => a.status === 409)) {
    expect(conflict.json.code).toBe('idempotency_key_in_use');
    expect(conflict.headers.get('retry-after')).toBe('1');
  }
  return { accepted: accepted.length, conflicts: answers.length - accepted.length };
}

describe(`${N} concurrent identical POST /payments`, () => {
  it('when Redis works, then exactly one payment; the rest replay it or get 409', async () => {
    const api = await apiWith();
    const merchant = await api.merchant();
    const answers = await race(api, merchant.apiKey, 'race-redis-up');
    await expectExactlyOnePayment(merchant.id, answers);
  });

  it('when Redis is stopped, then the database alone allows exactly one payment', async () => {
    const api = await apiWith();
    const merchant = await api.merchant();
    await redisProxy.stop();
    try {
      const answers = await race(api, merchant.apiKey, 'race-redis-down');
      const { accepted } = await expectExactlyOnePayment(merchant.id, answers);
      // No lock to report "in flight": every loser waited on the row and got the replay.
      expect(accepted).toBe(N);
    } finally {
      await redisProxy.start();
    }
  });

  it('when the lock expires mid-request, then several holders write and still one payment exists', async () => {
    let writers = 0;
    const api = await apiWith({ IDEMPOTENCY_LOCK_TTL_MS: '50' }, async () => {
      writers++;
      await new Promise((r) => setTimeout(r, 150)); // a GC pause, longer than the lock's TTL
    });
    const merchant = await api.merchant();
    const answers = await race(api, merchant.apiKey, 'race-lock-expired', 400);
    // The fault really happened: more than one request held the "exclusive" lock.
    expect(writers).toBeGreaterThan(1);
    await expectExactlyOnePayment(merchant.id, answers);
  });

  it('when Redis dies while the lock is held, then the request completes and the retry replays', async () => {
    const api = await apiWith({}, async () => {
      await redisProxy.stop();
    });
    const merchant = await api.merchant();
    const answers: Answer[] = [];
    try {
      const first = await postPayment(api, { apiKey: merchant.apiKey, key: 'dies-mid', body });
      answers.push(first);
      expect(first.status).toBe(202);
      const retry = await postPayment(api, { apiKey: merchant.apiKey, key: 'dies-mid', body });
      expect(retry.status).toBe(202);
      expect(retry.text).toBe(first.text);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      answers.push(retry);
    } finally {
      await redisProxy.start();
    }
    await expectExactlyOnePayment(merchant.id, answers);
  });

  it('when in-flight mode is wait, then every racer gets the replay and none a 409', async () => {
    const api = await apiWith({ IDEMPOTENCY_IN_FLIGHT: 'wait', IDEMPOTENCY_WAIT_MS: '5000' });
    const merchant = await api.merchant();
    const answers = await race(api, merchant.apiKey, 'race-wait');
    const { conflicts } = await expectExactlyOnePayment(merchant.id, answers);
    expect(conflicts).toBe(0);
  });

  it('when Redis is down and the service fails closed, then 503 and nothing is written', async () => {
    const api = await apiWith({ REDIS_FAILURE_MODE: 'closed' });
    const merchant = await api.merchant();
    const before = await countWrites(db);
    await redisProxy.stop();
    try {
      const res = await postPayment(api, { apiKey: merchant.apiKey, key: 'closed-1', body });
      expect(res.status).toBe(503);
      expect(res.json.code).toBe('service_unavailable');
      expect(res.headers.get('retry-after')).toBe('2');
      expect(await countWrites(db)).toEqual(before);
    } finally {
      await redisProxy.start();
    }
  });
});
