import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BENCH_TIER, defineTier } from '../../src/merchants/tier-repository.js';
import { metricsRegistry } from '../../src/platform/metrics.js';
import { registerRefundBacklogProbe } from '../../src/refunds/refund-backlog-metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/isolation.js';
import { postRefund, settledPayment } from '../support/refund-client.js';
import { startTestApi, type TestApi } from '../support/test-api.js';

let db: TestDatabase;
let api: TestApi;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startTestApi(db);
  await defineTier(db.pool, BENCH_TIER);
});

afterAll(async () => {
  await api.close();
  await db.drop();
});

/** The gauge's value per state, as a scrape reads it. */
async function refundJobs(): Promise<Record<string, number>> {
  const metric = await metricsRegistry.getSingleMetric('refund_jobs')?.get();
  return Object.fromEntries((metric?.values ?? []).map((v) => [String(v.labels.state), v.value]));
}

describe('refund_jobs gauge', () => {
  it('when refunds wait and one is dead, then a scrape reports pending and dead from the table', async () => {
    const unregister = registerRefundBacklogProbe(db.login('settlement'));
    try {
      expect(await refundJobs()).toEqual({ pending: 0, dead: 0 });
      const { apiKey } = await api.merchant('Refunds', BENCH_TIER.name);
      const paymentId = await settledPayment(api, db, apiKey, { amount: 1000 });
      for (const amount of [100, 200, 300]) {
        expect((await postRefund(api, { apiKey, paymentId, body: { amount } })).status).toBe(202);
      }
      // No settlement role runs here: the three jobs stay pending.
      expect(await refundJobs()).toEqual({ pending: 3, dead: 0 });
      await db.pool.query(
        `UPDATE refund_jobs SET state = 'dead'
          WHERE refund_id = (SELECT refund_id FROM refund_jobs LIMIT 1)`,
      );
      expect(await refundJobs()).toEqual({ pending: 2, dead: 1 });
    } finally {
      unregister();
    }
  });
});
