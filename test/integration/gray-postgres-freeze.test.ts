import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { report, steadyLoad, summarize } from '../support/steady-load.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import {
  countWrites,
  postPayment,
  startTestApi,
  type Answer,
  type TestApi,
} from '../support/test-api.js';

/**
 * Postgres frozen (accepts, never answers) under load: every request is answered within the
 * request deadline (202 or 503 + Retry-After), and retries with the same keys end with exactly
 * one payment per key, whatever the fate of the writes that were in flight.
 */
const DEADLINE_MS = 2_000;
/** GRAY_PG_FREEZE_MS=10000 GRAY_RATE=100 reproduces the Done-when figures. */
const FREEZE_MS = Number(process.env.GRAY_PG_FREEZE_MS ?? 3_000);
const RATE = Number(process.env.GRAY_RATE ?? 30);
let db: TestDatabase;
let proxy: TcpProxy;
let api: TestApi;

beforeAll(async () => {
  db = await createTestDatabase();
  const url = new URL(db.roleUrl('api'));
  proxy = await startTcpProxy(url.hostname, Number(url.port || 5432));
  url.port = String(proxy.port);
  api = await startTestApi(db, {
    DATABASE_URL: url.toString(),
    REQUEST_DEADLINE_MS: String(DEADLINE_MS),
    DATABASE_CONNECT_TIMEOUT_MS: '1000',
    DATABASE_QUERY_TIMEOUT_MS: '1500',
    DATABASE_STATEMENT_TIMEOUT_MS: '1000',
    UNAVAILABLE_RETRY_AFTER_SECONDS: '1',
  });
});
afterAll(async () => {
  proxy.thaw();
  await api.close();
  await proxy.close();
  await db.drop();
});

/** Retries `key` as a client would (same body, honouring Retry-After) until it is not a 503/409. */
async function retryUntilAnswered(apiKey: string, key: string, body: unknown): Promise<Answer> {
  for (let attempt = 0; ; attempt++) {
    const answer = await postPayment(api, { apiKey, key, body });
    if ((answer.status !== 503 && answer.status !== 409) || attempt >= 40) return answer;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function paymentIdsByKey(merchantId: string): Promise<Map<string, string>> {
  const { rows } = await db.pool.query<{ idempotency_key: string; payment_id: string }>(
    'SELECT idempotency_key, payment_id FROM idempotency_keys WHERE merchant_id = $1',
    [merchantId],
  );
  return new Map(rows.map((r) => [r.idempotency_key, r.payment_id]));
}

describe('postgres frozen mid-load', () => {
  it('when Postgres freezes for 3 s under 30 new payments/s, then every request is answered within the deadline (202, or 503 + Retry-After), every 202 payment is in the database, and retries leave exactly one payment per key', async () => {
    // A wide tier: the retries after the load would otherwise exceed the default tier's burst.
    await defineTier(db.pool, BENCH_TIER);
    const merchant = await api.merchant('Gray', BENCH_TIER.name);
    for (let i = 0; i < 5; i++) await postPayment(api, { apiKey: merchant.apiKey, key: `w${i}` });
    const loading = steadyLoad(api, merchant.apiKey, {
      ratePerSecond: RATE,
      durationMs: FREEZE_MS + 3_000,
      keyPrefix: 'pg-freeze',
    });
    await new Promise((r) => setTimeout(r, 1_500));
    proxy.freeze();
    await new Promise((r) => setTimeout(r, FREEZE_MS));
    proxy.thaw();
    const results = await loading;
    report(summarize(`postgres frozen ${FREEZE_MS} ms at ${RATE}/s`, results));

    for (const { answer, latencyMs } of results) {
      expect([202, 503]).toContain(answer.status);
      if (answer.status === 503) {
        expect(answer.json.code).toBe('service_unavailable');
        expect(answer.headers.get('retry-after')).toBe('1');
      }
      // The deadline, plus room for a loaded machine to deliver the answer.
      expect(latencyMs).toBeLessThanOrEqual(DEADLINE_MS + 1_500);
    }
    expect(results.some((r) => r.answer.status === 503)).toBe(true);

    const committed = await paymentIdsByKey(merchant.id);
    for (const { key, answer } of results.filter((r) => r.answer.status === 202)) {
      expect(committed.get(key)).toBe(answer.json.id);
    }
    // Every key retried as a client would: one payment each, the committed one when there was.
    for (const { key, body, answer } of results) {
      const final = await retryUntilAnswered(merchant.apiKey, key, body);
      expect(final.status).toBe(202);
      if (answer.status === 202) expect(final.json.id).toBe(answer.json.id);
    }
    const after = await paymentIdsByKey(merchant.id);
    expect(after.size).toBe(results.length + 5);
    const writes = await countWrites(db);
    expect(writes.payments).toBe(writes.keys);
    expect(writes.outbox).toBe(writes.payments);
  }, 120_000);

  it('when the answer to a committed INSERT never arrives (query timeout), then 503, and the retry with the same key replays that payment', async () => {
    const merchant = await api.merchant();
    await postPayment(api, { apiKey: merchant.apiKey, key: 'warm' });
    const body = { amount: 4242, currency: 'EUR' };
    proxy.freeze('responses');
    let first: Answer;
    try {
      first = await postPayment(api, { apiKey: merchant.apiKey, key: 'unknown-outcome', body });
    } finally {
      proxy.thaw();
    }
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('1');
    // Postgres did commit it: the outcome was unknown to the API, not lost.
    const committed = await paymentIdsByKey(merchant.id);
    expect(committed.get('unknown-outcome')).toBeDefined();

    const retry = await retryUntilAnswered(merchant.apiKey, 'unknown-outcome', body);
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.json.id).toBe(committed.get('unknown-outcome'));
    const { rows } = await db.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM payments WHERE merchant_id = $1 AND amount = 4242',
      [merchant.id],
    );
    expect(Number(rows[0]?.n)).toBe(1);
  });
});
