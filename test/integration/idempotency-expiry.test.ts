import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createIdempotencyReaper } from '../../src/idempotency/idempotency-reaper.js';
import { createLogger } from '../../src/platform/telemetry/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postPayment, startTestApi, type TestApi } from '../support/test-api.js';

let db: TestDatabase;
let api: TestApi;
let apiKey: string;
const body = { amount: 500, currency: 'SEK' };

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db, { IDEMPOTENCY_KEY_TTL_SECONDS: '1' });
  ({ apiKey } = await api.merchant());
});
afterAll(async () => {
  await api.close();
  await db.drop();
});

describe('idempotency key expiry', () => {
  it('when a key has expired, then the same request starts a new payment (cache and database agree)', async () => {
    const first = await postPayment(api, { apiKey, key: 'expiring', body });
    const replay = await postPayment(api, { apiKey, key: 'expiring', body });
    expect(replay.json.id).toBe(first.json.id);
    // Wait out the 1 s TTL (the cache entry's PX and the record's expires_at both end).
    await new Promise((r) => setTimeout(r, 1_100));
    const again = await postPayment(api, { apiKey, key: 'expiring', body });
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.json.id).not.toBe(first.json.id);
    const { rows } = await db.pool.query<{ payment_id: string }>(
      `SELECT payment_id FROM idempotency_keys WHERE idempotency_key = 'expiring'`,
    );
    expect(rows).toEqual([{ payment_id: again.json.id }]);
  });

  it('when the reaper runs, then it deletes expired records in batches and never a payment', async () => {
    const live = await postPayment(api, { apiKey, key: 'live', body });
    for (let i = 0; i < 7; i++) await postPayment(api, { apiKey, key: `old-${i}`, body });
    await db.pool.query(
      `UPDATE idempotency_keys SET expires_at = now() - interval '1 hour' WHERE idempotency_key LIKE 'old-%'`,
    );
    await db.pool.query(
      `UPDATE idempotency_keys SET expires_at = now() + interval '1 hour' WHERE idempotency_key NOT LIKE 'old-%'`,
    );
    const paymentsBefore = await db.pool.query('SELECT count(*)::int AS n FROM payments');

    const reaper = createIdempotencyReaper(
      db.login('api'),
      createLogger({ LOG_LEVEL: 'silent', LOG_FORMAT: 'json' }),
      {
        batch: 3,
        intervalMs: 60_000,
      },
    );
    // 7 expired records, 3 per batch: three DELETE statements of 3, 3 and 1 rows, all gone.
    const query = vi.spyOn(db.login('api'), 'query');
    try {
      expect(await reaper.runOnce()).toBe(7);
      const statements = query.mock.calls.map(([text]) => text);
      const results = (await Promise.all(query.mock.results.map((r) => r.value as unknown))) as (
        pg.QueryResult | undefined
      )[];
      const deletedPerStatement = statements.flatMap((text, i) =>
        text.includes('DELETE FROM idempotency_keys') ? [results[i]?.rowCount] : [],
      );
      expect(deletedPerStatement).toEqual([3, 3, 1]);
    } finally {
      query.mockRestore();
    }

    const keys = await db.pool.query<{ idempotency_key: string }>(
      'SELECT idempotency_key FROM idempotency_keys ORDER BY idempotency_key',
    );
    expect(keys.rows.map((r) => r.idempotency_key)).toEqual(['expiring', 'live']);
    const paymentsAfter = await db.pool.query('SELECT count(*)::int AS n FROM payments');
    expect(paymentsAfter.rows).toEqual(paymentsBefore.rows);
    expect(live.status).toBe(202);
    expect(await reaper.runOnce()).toBe(0);
  });
});
